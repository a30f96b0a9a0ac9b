import type { TextTaskName } from '../metadata/records.js';
import type { TextModelSpec } from './text-model.js';
/**
 * Reads what a Hugging Face model folder, as sentence-transformers and optimum export it, says
 * about its model: which task it serves, how token vectors are pooled, the input length limit and
 * the prompts. File formats: https://sbert.net/docs/sentence_transformer/usage/custom_models.html
 * (modules.json, 1_Pooling/config.json, config_sentence_transformers.json,
 * sentence_bert_config.json) and https://huggingface.co/docs/transformers/main_classes/configuration
 * (config.json). Task rules follow text-embeddings-inference (docs/ and its router).
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createError, type ServeFnError } from '../errors/index.js';
import { pathInside } from '../model-repository/repository-scan.js';
import type { PoolingMode } from './pooling.js';

export type TextTask = TextTaskName;

/** What a sentence-transformers / optimum export folder says about its model: the model's spec (named after the folder), and where its files are. */
export interface TextModelFolder extends Omit<TextModelSpec, 'modelId'> {
  readonly dir: string;
  readonly modelFile: string;
  readonly tokenizerFile: string;
  readonly hiddenSize?: number;
}

export interface FolderOverrides { readonly task?: TextTask; readonly pooling?: PoolingMode }

/** Where optimum writes the graph first, then the plain and the NPU (.om) layouts. */
const MODEL_FILES = ['onnx/model.onnx', 'model.onnx', 'model.om'] as const;

/** sentence-transformers Pooling config flags, in the order TEI checks them. */
const POOLING_FLAGS: readonly (readonly [string, PoolingMode])[] = [
  ['pooling_mode_cls_token', 'cls'],
  ['pooling_mode_mean_tokens', 'mean'],
  ['pooling_mode_max_tokens', 'max'],
  ['pooling_mode_lasttoken', 'last-token'],
  ['pooling_mode_weightedmean_tokens', 'weighted-mean'],
];

/** Module types whose effect the engine reproduces; any other (Dense, Router...) would change the vectors unseen. */
const KNOWN_MODULES = new Set(['Transformer', 'MLMTransformer', 'Pooling', 'SpladePooling', 'Normalize']);

/**
 * transformers writes int(1e30) as model_max_length when the tokenizer sets none; lengths beyond
 * an int32 are such sentinels, not limits.
 */
const MAX_SANE_LENGTH = 2 ** 31 - 1;

/** RoBERTa-style position ids start after the padding id, so max_position_embeddings overstates the limit (TEI subtracts pad_token_id + 1 too). */
const OFFSET_POSITION_MODELS = new Set(['roberta', 'xlm-roberta', 'camembert']);

/** True when dir looks like such an export: config.json + tokenizer.json + a model file. */
export function isTextModelFolder(dir: string): boolean {
  return existsSync(join(dir, 'config.json')) && existsSync(join(dir, 'tokenizer.json')) && findModelFile(dir) !== undefined;
}

/** Throws SF_ERR_TEXT_MODEL_FOLDER_INVALID naming the file and what is wrong. */
export function readTextModelFolder(dir: string, overrides: FolderOverrides = {}): TextModelFolder {
  const folder = resolve(dir);
  const files = new FolderFiles(folder);
  const config = files.object('config.json', true)!;
  const modelFile = findModelFile(folder);
  if (modelFile === undefined) throw files.invalid(MODEL_FILES.join(', '), 'none of these model files exists');
  const tokenizerFile = join(folder, 'tokenizer.json');
  if (!existsSync(tokenizerFile)) throw files.invalid('tokenizer.json', 'the file is missing');

  const architectures = files.stringList(config, 'config.json', 'architectures');
  const modelType = files.optionalString(config, 'config.json', 'model_type');
  const hiddenSize = files.optionalCount(config, 'config.json', 'hidden_size');
  const modules = readModules(files);
  const folderPooling = modules.pooling === undefined ? undefined : modules.pooling.splade ? readSpladePooling(files, modules.pooling.file) : readPooling(files, modules.pooling.file, hiddenSize);
  const labels = readLabels(files, config);
  const { task, pooling } = taskAndPooling(files, { architectures, labels, folderPooling, poolingFile: modules.pooling?.file }, overrides);

  const st = files.object('config_sentence_transformers.json', false) ?? {};
  const prompts = readPrompts(files, st);
  const defaultPromptName = readDefaultPromptName(files, st, prompts);
  return {
    dir: folder,
    name: basename(folder),
    modelFile,
    tokenizerFile,
    task,
    pooling,
    maxInputLength: readMaxInputLength(files, config, modelType),
    prompts,
    ...(defaultPromptName === undefined ? {} : { defaultPromptName }),
    labels: task === 'classify' || task === 'rerank' ? labels : [],
    ...(hiddenSize === undefined ? {} : { hiddenSize }),
  };
}

/** TEI's rules: *ForSequenceClassification classifies (re-ranks with one label); *ForMaskedLM with splade pooling is sparse; the rest embeds. */
function taskAndPooling(
  files: FolderFiles,
  folder: { architectures: readonly string[]; labels: readonly string[]; folderPooling?: PoolingMode; poolingFile?: string },
  overrides: FolderOverrides,
): { task: TextTask; pooling: PoolingMode } {
  const { architectures, labels } = folder;
  const pooling = overrides.pooling ?? folder.folderPooling;
  const classifier = architectures.some((a) => a.endsWith('ForSequenceClassification'));
  const maskedLm = architectures.some((a) => a.endsWith('ForMaskedLM'));
  const task = overrides.task ?? (classifier ? (labels.length === 1 ? 'rerank' : 'classify') : maskedLm && pooling === 'splade' ? 'sparse' : 'embed');
  const needs = (ok: boolean, file: string, problem: string): void => {
    if (!ok) throw files.invalid(file, problem);
  };
  if (task === 'classify' || task === 'rerank') {
    needs(labels.length > 0, 'config.json', `a ${task === 'rerank' ? 're-ranker' : 'classifier'} needs id2label`);
    needs(overrides.pooling === undefined, 'config.json', `pooling '${overrides.pooling}' was asked for, but a ${task} model reads its score from the classification head`);
    return { task, pooling: 'cls' };
  }
  if (task === 'sparse') {
    needs(maskedLm, 'config.json', `SPLADE needs a *ForMaskedLM model, architectures are [${architectures.join(', ')}]`);
    needs(pooling === undefined || pooling === 'splade', folder.poolingFile ?? 'modules.json', `a sparse model pools with splade, not ${pooling}`);
    return { task, pooling: 'splade' };
  }
  needs(pooling !== undefined, '1_Pooling/config.json', 'no pooling configuration found (modules.json names no Pooling module and 1_Pooling/config.json is missing); give a pooling mode');
  needs(pooling !== 'splade' || maskedLm, 'config.json', `splade pooling needs a *ForMaskedLM model, architectures are [${architectures.join(', ')}]`);
  return { task, pooling: pooling! };
}

function findModelFile(dir: string): string | undefined {
  return MODEL_FILES.map((file) => join(dir, file)).find((path) => existsSync(path));
}

interface Modules {
  /** The pooling module's config file, relative to the folder, and whether it is SpladePooling. */
  readonly pooling?: { readonly file: string; readonly splade: boolean };
}

/** modules.json lists the pipeline; without it, sentence-transformers and TEI look for 1_Pooling. */
function readModules(files: FolderFiles): Modules {
  const list = files.json('modules.json', false);
  if (list === undefined) return existsSync(join(files.folder, '1_Pooling/config.json')) ? { pooling: { file: '1_Pooling/config.json', splade: false } } : {};
  if (!Array.isArray(list)) throw files.invalid('modules.json', 'must be a list of modules');
  let pooling: Modules['pooling'];
  list.forEach((entry: unknown, i) => {
    const where = `module ${i}`;
    if (!isObject(entry) || typeof entry.type !== 'string' || typeof entry.path !== 'string') throw files.invalid('modules.json', `${where} needs a string "type" and "path"`);
    const kind = entry.type.slice(entry.type.lastIndexOf('.') + 1);
    if (!KNOWN_MODULES.has(kind)) throw files.invalid('modules.json', `${where} has type ${entry.type}, which is not supported (only ${[...KNOWN_MODULES].join(', ')})`);
    // "" is the folder itself (the Transformer module); any other path must stay inside the folder.
    if (entry.path !== '' && pathInside(files.folder, entry.path) === undefined) throw files.invalid('modules.json', `${where} path "${entry.path}" leads outside the model folder`);
    // Normalize needs nothing here: TEI's `normalize` is true unless a request says otherwise.
    if (kind === 'Pooling' || kind === 'SpladePooling') {
      if (pooling !== undefined) throw files.invalid('modules.json', `${where} is a second pooling module`);
      if (entry.path === '') throw files.invalid('modules.json', `${where} (${kind}) needs the subfolder holding its config.json as its path`);
      pooling = { file: join(entry.path, 'config.json'), splade: kind === 'SpladePooling' };
    }
  });
  return pooling === undefined ? {} : { pooling };
}

function readPooling(files: FolderFiles, source: string, hiddenSize: number | undefined): PoolingMode {
  const config = files.object(source, true)!;
  const set = POOLING_FLAGS.filter(([flag]) => config[flag] === true).map(([, mode]) => mode);
  if (config.pooling_mode_mean_sqrt_len_tokens === true) throw files.invalid(source, 'pooling_mode_mean_sqrt_len_tokens is not supported');
  if (config.include_prompt === false) throw files.invalid(source, 'include_prompt false (pooling without the prompt tokens) is not supported');
  if (set.length !== 1) throw files.invalid(source, set.length === 0 ? 'no pooling_mode_* flag is true' : `several pooling modes are set (${set.join(', ')}); concatenated poolings are not supported`);
  const width = files.optionalCount(config, source, 'word_embedding_dimension');
  if (width !== undefined && hiddenSize !== undefined && width !== hiddenSize) throw files.invalid(source, `word_embedding_dimension ${width} differs from config.json hidden_size ${hiddenSize}`);
  return set[0]!;
}

/** sentence-transformers' SpladePooling: the engine computes max pooling of log(1 + relu(x)). */
function readSpladePooling(files: FolderFiles, source: string): PoolingMode {
  const config = files.object(source, false) ?? {};
  if ((config.pooling_strategy ?? 'max') !== 'max') throw files.invalid(source, `pooling_strategy ${String(config.pooling_strategy)} is not supported (only max)`);
  if ((config.activation_function ?? 'relu') !== 'relu') throw files.invalid(source, `activation_function ${String(config.activation_function)} is not supported (only relu)`);
  return 'splade';
}

/** id2label in id order; the ids must be 0..n-1. */
function readLabels(files: FolderFiles, config: Record<string, unknown>): string[] {
  const map = config.id2label;
  if (map === undefined) return [];
  if (!isObject(map)) throw files.invalid('config.json', 'id2label must be an object of id to label');
  const entries = Object.entries(map);
  const labels: string[] = new Array<string>(entries.length);
  for (const [id, label] of entries) {
    const index = Number(id);
    if (String(index) !== id || index >= entries.length || typeof label !== 'string') throw files.invalid('config.json', `id2label must map the ids 0..${entries.length - 1} to strings, found "${id}": ${JSON.stringify(label)}`);
    labels[index] = label;
  }
  return labels;
}

function readPrompts(files: FolderFiles, st: Record<string, unknown>): Record<string, string> {
  if (st.prompts === undefined || st.prompts === null) return {};
  if (!isObject(st.prompts) || !Object.values(st.prompts).every((p) => typeof p === 'string')) throw files.invalid('config_sentence_transformers.json', 'prompts must map names to strings');
  return { ...(st.prompts as Record<string, string>) };
}

function readDefaultPromptName(files: FolderFiles, st: Record<string, unknown>, prompts: Record<string, string>): string | undefined {
  const name = st.default_prompt_name;
  if (name === undefined || name === null) return undefined;
  if (typeof name !== 'string' || !Object.hasOwn(prompts, name)) throw files.invalid('config_sentence_transformers.json', `default_prompt_name ${JSON.stringify(name)} is not one of the prompts`);
  return name;
}

function readMaxInputLength(files: FolderFiles, config: Record<string, unknown>, modelType: string | undefined): number {
  const sane = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value > 0 && value <= MAX_SANE_LENGTH;
  const sbert = files.object('sentence_bert_config.json', false)?.max_seq_length;
  const tokenizer = files.object('tokenizer_config.json', false)?.model_max_length;
  let positions = config.max_position_embeddings;
  if (sane(positions) && modelType !== undefined && OFFSET_POSITION_MODELS.has(modelType)) {
    positions -= (typeof config.pad_token_id === 'number' ? config.pad_token_id : 1) + 1;
  }
  const lengths = [sbert, tokenizer, positions].filter(sane);
  if (lengths.length === 0) throw files.invalid('config.json', 'no usable input length limit: sentence_bert_config.json max_seq_length, tokenizer_config.json model_max_length and config.json max_position_embeddings are all missing or not positive integers');
  return Math.min(...lengths);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The folder's JSON files, read with errors that name the file. */
class FolderFiles {
  constructor(readonly folder: string) {}

  invalid(file: string, problem: string, cause?: unknown): ServeFnError {
    return createError('SF_ERR_TEXT_MODEL_FOLDER_INVALID', this.folder, `${file}: ${problem}`, ...(cause === undefined ? [] : [{ cause }]));
  }

  json(file: string, required: boolean): unknown {
    const path = join(this.folder, file);
    if (!existsSync(path)) {
      if (required) throw this.invalid(file, 'the file is missing');
      return undefined;
    }
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as unknown;
    } catch (err) {
      throw this.invalid(file, `cannot be read as JSON (${(err as Error).message})`, err);
    }
  }

  object(file: string, required: boolean): Record<string, unknown> | undefined {
    const value = this.json(file, required);
    if (value !== undefined && !isObject(value)) throw this.invalid(file, 'must hold a JSON object');
    return value;
  }

  stringList(object: Record<string, unknown>, file: string, key: string): string[] {
    const value = object[key];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw this.invalid(file, `${key} must be a list of strings`);
    return value as string[];
  }

  optionalString(object: Record<string, unknown>, file: string, key: string): string | undefined {
    const value = object[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw this.invalid(file, `${key} must be a string`);
    return value;
  }

  optionalCount(object: Record<string, unknown>, file: string, key: string): number | undefined {
    const value = object[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw this.invalid(file, `${key} must be a positive integer`);
    return value;
  }
}
