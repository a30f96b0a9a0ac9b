import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTextModelFolder, readTextModelFolder } from '../../src/text/model-folder.js';
import { thrown } from '../helpers/thrown.js';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

type Files = Record<string, unknown>;

/** Writes a folder of files (objects as JSON, strings as they are) under a fresh temp dir. */
function folder(name: string, files: Files): string {
  const root = mkdtempSync(join(tmpdir(), 'serve-fn-folder-'));
  roots.push(root);
  const dir = join(root, name);
  for (const [file, content] of Object.entries(files)) {
    if (content === undefined) continue;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

const st = (n: number, module: string): { idx: number; name: string; path: string; type: string } => ({ idx: n, name: String(n), path: n === 0 ? '' : `${n}_${module}`, type: `sentence_transformers.models.${module}` });
const poolingConfig = (flag: string, extra: Files = {}): Files => ({
  word_embedding_dimension: 512, pooling_mode_cls_token: false, pooling_mode_mean_tokens: false, pooling_mode_max_tokens: false,
  pooling_mode_mean_sqrt_len_tokens: false, pooling_mode_weightedmean_tokens: false, pooling_mode_lasttoken: false, include_prompt: true,
  [flag]: true, ...extra,
});

/** The layout of BAAI/bge-small-zh-v1.5 with optimum's onnx/ subfolder. */
const bgeFiles = (): Files => ({
  'config.json': { architectures: ['BertModel'], hidden_size: 512, max_position_embeddings: 512, model_type: 'bert', id2label: { 0: 'LABEL_0' } },
  'tokenizer.json': '{}',
  'tokenizer_config.json': { model_max_length: 1e30 },
  'onnx/model.onnx': 'x',
  'modules.json': [st(0, 'Transformer'), st(1, 'Pooling'), st(2, 'Normalize')],
  '1_Pooling/config.json': poolingConfig('pooling_mode_cls_token'),
  'sentence_bert_config.json': { max_seq_length: 512, do_lower_case: true },
});

/** The layout of Qwen/Qwen3-Embedding-0.6B, with the graph at the top. */
const qwenFiles = (): Files => ({
  'config.json': { architectures: ['Qwen3ForCausalLM'], hidden_size: 1024, max_position_embeddings: 32768, model_type: 'qwen3' },
  'tokenizer.json': '{}',
  'tokenizer_config.json': { model_max_length: 131072 },
  'model.onnx': 'x',
  'modules.json': [st(0, 'Transformer'), st(1, 'Pooling'), st(2, 'Normalize')],
  '1_Pooling/config.json': poolingConfig('pooling_mode_lasttoken', { word_embedding_dimension: 1024 }),
  'sentence_bert_config.json': { max_seq_length: 8192, do_lower_case: false },
  'config_sentence_transformers.json': {
    prompts: { query: 'Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:', document: '' },
    default_prompt_name: null, similarity_fn_name: 'cosine',
  },
});

/** BAAI/bge-reranker-base: XLM-RoBERTa, one label, no sentence-transformers files. */
const rerankerFiles = (): Files => ({
  'config.json': { architectures: ['XLMRobertaForSequenceClassification'], hidden_size: 768, max_position_embeddings: 514, pad_token_id: 1, model_type: 'xlm-roberta', id2label: { 0: 'LABEL_0' } },
  'tokenizer.json': '{}',
  'onnx/model.onnx': 'x',
});

/** naver/splade-v3 as sentence-transformers' SparseEncoder saves it. */
const spladeFiles = (): Files => ({
  'config.json': { architectures: ['BertForMaskedLM'], hidden_size: 768, max_position_embeddings: 512, model_type: 'bert' },
  'tokenizer.json': '{}',
  'model.onnx': 'x',
  'modules.json': [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.sparse_encoder.models.MLMTransformer' },
    { idx: 1, name: '1', path: '1_SpladePooling', type: 'sentence_transformers.sparse_encoder.models.SpladePooling' },
  ],
  '1_SpladePooling/config.json': { pooling_strategy: 'max', activation_function: 'relu', word_embedding_dimension: 30522 },
});

describe('readTextModelFolder: layouts', () => {
  it('reads a bge-style CLS embedder with Normalize', () => {
    const dir = folder('bge-small-zh-v1.5', bgeFiles());
    expect(readTextModelFolder(dir)).toEqual({
      dir, name: 'bge-small-zh-v1.5', modelFile: join(dir, 'onnx/model.onnx'), tokenizerFile: join(dir, 'tokenizer.json'),
      task: 'embed', pooling: 'cls', maxInputLength: 512, prompts: {}, labels: [],
      hiddenSize: 512,
    });
  });

  it('reads a Qwen3 last-token embedder with its prompts; the smallest sane length wins', () => {
    const info = readTextModelFolder(folder('qwen3', qwenFiles()));
    expect(info).toMatchObject({ task: 'embed', pooling: 'last-token', maxInputLength: 8192 });
    expect(info.modelFile.endsWith('/qwen3/model.onnx')).toBe(true);
    expect(info.prompts).toEqual({ query: 'Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:', document: '' });
    expect(info.defaultPromptName).toBeUndefined();
    expect(readTextModelFolder(folder('q', { ...qwenFiles(), 'config_sentence_transformers.json': { prompts: { query: 'q: ' }, default_prompt_name: 'query' } })).defaultPromptName).toBe('query');
  });

  it('reads a one-label sequence classifier as a re-ranker, with RoBERTa position offset', () => {
    expect(readTextModelFolder(folder('bge-reranker-base', rerankerFiles()))).toMatchObject({
      task: 'rerank', pooling: 'cls', maxInputLength: 512, labels: ['LABEL_0'], hiddenSize: 768,
    });
  });

  it('reads a several-label classifier with labels in id order', () => {
    const files = { ...rerankerFiles(), 'config.json': { architectures: ['BertForSequenceClassification'], max_position_embeddings: 512, id2label: { 2: 'neutral', 0: 'negative', 1: 'positive' } } };
    expect(readTextModelFolder(folder('sentiment', files))).toMatchObject({ task: 'classify', pooling: 'cls', labels: ['negative', 'positive', 'neutral'], maxInputLength: 512 });
  });

  it('reads a SPLADE MaskedLM with SpladePooling as sparse', () => {
    expect(readTextModelFolder(folder('splade-v3', spladeFiles()))).toMatchObject({ task: 'sparse', pooling: 'splade' });
  });

  it('takes 1_Pooling/config.json without modules.json, as TEI does, and a pooling override', () => {
    const files = { ...bgeFiles(), 'modules.json': undefined, '1_Pooling/config.json': poolingConfig('pooling_mode_mean_tokens') };
    expect(readTextModelFolder(folder('m', files))).toMatchObject({ pooling: 'mean' });
    expect(readTextModelFolder(folder('m', files), { pooling: 'max' }).pooling).toBe('max');
  });

  it('follows modules.json to a pooling module in another folder', () => {
    const files = { ...bgeFiles(), 'modules.json': [st(0, 'Transformer'), { ...st(1, 'Pooling'), path: 'pooling/weighted' }], 'pooling/weighted/config.json': poolingConfig('pooling_mode_weightedmean_tokens') };
    expect(readTextModelFolder(folder('m', files))).toMatchObject({ pooling: 'weighted-mean' });
  });

  it('makes an old SPLADE export without modules.json sparse when asked for splade pooling', () => {
    const files = { ...spladeFiles(), 'modules.json': undefined, '1_SpladePooling/config.json': undefined };
    expect(readTextModelFolder(folder('efficient-splade', files), { pooling: 'splade' })).toMatchObject({ task: 'sparse', pooling: 'splade' });
  });

  it('lets the task be overridden', () => {
    expect(readTextModelFolder(folder('r', rerankerFiles()), { task: 'classify' })).toMatchObject({ task: 'classify', labels: ['LABEL_0'] });
  });

  it('finds model.om', () => {
    const dir = folder('npu', { ...rerankerFiles(), 'onnx/model.onnx': undefined, 'model.om': 'x' });
    expect(readTextModelFolder(dir).modelFile).toBe(join(dir, 'model.om'));
  });
});

describe('isTextModelFolder', () => {
  it('needs config.json, tokenizer.json and a model file', () => {
    expect(isTextModelFolder(folder('a', bgeFiles()))).toBe(true);
    expect(isTextModelFolder(folder('b', { ...bgeFiles(), 'onnx/model.onnx': undefined }))).toBe(false);
    expect(isTextModelFolder(folder('c', { ...bgeFiles(), 'tokenizer.json': undefined }))).toBe(false);
    expect(isTextModelFolder(folder('d', { ...bgeFiles(), 'config.json': undefined }))).toBe(false);
  });
});

describe('readTextModelFolder: errors name the file and the problem', () => {
  const cases: [string, Files, RegExp, Parameters<typeof readTextModelFolder>[1]?][] = [
    ['config.json missing', { ...bgeFiles(), 'config.json': undefined }, /config\.json: the file is missing/],
    ['config.json not an object', { ...bgeFiles(), 'config.json': '[1]' }, /config\.json: must hold a JSON object/],
    ['no model file', { ...bgeFiles(), 'onnx/model.onnx': undefined }, /onnx\/model\.onnx, model\.onnx, model\.om: none of these model files exists/],
    ['no tokenizer', { ...bgeFiles(), 'tokenizer.json': undefined }, /tokenizer\.json: the file is missing/],
    ['module path outside', { ...bgeFiles(), 'modules.json': [st(0, 'Transformer'), { ...st(1, 'Pooling'), path: '../../etc' }] }, /modules\.json: module 1 path "\.\.\/\.\.\/etc" leads outside the model folder/],
    ['absolute module path', { ...bgeFiles(), 'modules.json': [{ ...st(1, 'Pooling'), path: '/etc' }] }, /modules\.json: module 0 path "\/etc" leads outside/],
    ['unknown module', { ...bgeFiles(), 'modules.json': [st(0, 'Transformer'), st(1, 'Pooling'), st(2, 'Dense')] }, /modules\.json: module 2 has type sentence_transformers\.models\.Dense, which is not supported/],
    ['modules.json not a list', { ...bgeFiles(), 'modules.json': {} }, /modules\.json: must be a list of modules/],
    ['module without path', { ...bgeFiles(), 'modules.json': [{ type: 'sentence_transformers.models.Pooling' }] }, /modules\.json: module 0 needs a string "type" and "path"/],
    ['two pooling modules', { ...bgeFiles(), 'modules.json': [st(1, 'Pooling'), st(1, 'Pooling')] }, /modules\.json: module 1 is a second pooling module/],
    ['pooling module config missing', { ...bgeFiles(), '1_Pooling/config.json': undefined }, /1_Pooling\/config\.json: the file is missing/],
    ['no pooling flag', { ...bgeFiles(), '1_Pooling/config.json': { word_embedding_dimension: 512 } }, /1_Pooling\/config\.json: no pooling_mode_\* flag is true/],
    ['two pooling flags', { ...bgeFiles(), '1_Pooling/config.json': poolingConfig('pooling_mode_cls_token', { pooling_mode_mean_tokens: true }) }, /several pooling modes are set \(cls, mean\)/],
    ['mean sqrt len', { ...bgeFiles(), '1_Pooling/config.json': poolingConfig('pooling_mode_mean_sqrt_len_tokens') }, /pooling_mode_mean_sqrt_len_tokens is not supported/],
    ['prompt excluded', { ...bgeFiles(), '1_Pooling/config.json': poolingConfig('pooling_mode_mean_tokens', { include_prompt: false }) }, /include_prompt false/],
    ['width mismatch', { ...bgeFiles(), '1_Pooling/config.json': poolingConfig('pooling_mode_cls_token', { word_embedding_dimension: 384 }) }, /word_embedding_dimension 384 differs from config\.json hidden_size 512/],
    ['embedder without pooling', { ...bgeFiles(), 'modules.json': undefined, '1_Pooling/config.json': undefined }, /1_Pooling\/config\.json: no pooling configuration found/],
    ['splade on a BertModel', bgeFiles(), /config\.json: splade pooling needs a \*ForMaskedLM model/, { pooling: 'splade' }],
    ['sparse on a BertModel', bgeFiles(), /config\.json: SPLADE needs a \*ForMaskedLM model/, { task: 'sparse' }],
    ['splade log1p_relu', { ...spladeFiles(), '1_SpladePooling/config.json': { pooling_strategy: 'max', activation_function: 'log1p_relu' } }, /1_SpladePooling\/config\.json: activation_function log1p_relu is not supported/],
    ['splade sum', { ...spladeFiles(), '1_SpladePooling/config.json': { pooling_strategy: 'sum' } }, /pooling_strategy sum is not supported/],
    ['pooling asked of a reranker', rerankerFiles(), /config\.json: pooling 'mean' was asked for, but a rerank model/, { pooling: 'mean' }],
    ['classifier without labels', { ...rerankerFiles(), 'config.json': { architectures: ['BertForSequenceClassification'], max_position_embeddings: 512 } }, /config\.json: a classifier needs id2label/],
    ['id2label gap', { ...rerankerFiles(), 'config.json': { architectures: ['BertForSequenceClassification'], max_position_embeddings: 512, id2label: { 0: 'a', 2: 'b' } } }, /id2label must map the ids 0\.\.1 to strings, found "2"/],
    ['id2label id written twice', { ...rerankerFiles(), 'config.json': { architectures: ['BertForSequenceClassification'], max_position_embeddings: 512, id2label: { 0: 'a', '00': 'b' } } }, /found "00"/],
    ['id2label label not a string', { ...rerankerFiles(), 'config.json': { architectures: ['BertForSequenceClassification'], max_position_embeddings: 512, id2label: { 0: 1 } } }, /found "0": 1/],
    ['bad architectures', { ...bgeFiles(), 'config.json': { architectures: 'BertModel', max_position_embeddings: 512 } }, /config\.json: architectures must be a list of strings/],
    ['bad hidden_size', { ...bgeFiles(), 'config.json': { hidden_size: -1, max_position_embeddings: 512 } }, /config\.json: hidden_size must be a positive integer/],
    ['no length', { ...bgeFiles(), 'sentence_bert_config.json': undefined, 'tokenizer_config.json': { model_max_length: 1e30 }, 'config.json': { architectures: ['BertModel'] } }, /config\.json: no usable input length limit/],
    ['bad prompts', { ...qwenFiles(), 'config_sentence_transformers.json': { prompts: { query: 3 } } }, /config_sentence_transformers\.json: prompts must map names to strings/],
    ['unknown default prompt', { ...qwenFiles(), 'config_sentence_transformers.json': { prompts: { query: 'q' }, default_prompt_name: 'passage' } }, /default_prompt_name "passage" is not one of the prompts/],
  ];
  it.each(cases)('%s', (_name, files, message, overrides) => {
    const dir = folder('broken', files);
    const err = thrown(() => readTextModelFolder(dir, overrides));
    expect(err.code).toBe('SF_ERR_TEXT_MODEL_FOLDER_INVALID');
    expect(err.message).toContain(`Text model folder '${dir}' is invalid: `);
    expect(err.message).toMatch(message);
  });

  it('keeps the JSON parser error as the cause', () => {
    const err = thrown(() => readTextModelFolder(folder('broken', { ...bgeFiles(), 'sentence_bert_config.json': '{ max_seq_length: 5' })));
    expect(err.message).toMatch(/sentence_bert_config\.json: cannot be read as JSON/);
    expect(err.cause).toBeInstanceOf(SyntaxError);
  });
});
