import { fileURLToPath } from 'node:url';
import type { InferenceModel, InferenceModelInfo, InferRequest, InferResponse } from '../../src/inference/inference-model.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/spec/tensor.js';
import type { TextTask } from '../../src/text/model-folder.js';
import type { PoolingMode } from '../../src/text/pooling.js';
import { DEFAULT_TEXT_LIMITS, TextEngine, type TextLimits, type TextModelSpec } from '../../src/text/text-engine.js';
import { TextModelSet } from '../../src/text/text-model-set.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { runTextForward } from '../../src/instance/text-forward-pass.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { InstanceEngine } from '../../src/engine/instance-engine.js';
import { now } from '../../src/wire/epoch-time.js';
import type { TextForward } from '../../src/text/forward-scheduler.js';
import { noStreams } from './no-streams.js';

/** The BERT-style WordPiece tokenizer of the test fixtures ([PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4). */
export const WORDPIECE_TOKENIZER = fileURLToPath(new URL('../fixtures/text/wordpiece/tokenizer.json', import.meta.url));

/** Width of the fake model's hidden states. */
export const HIDDEN = 8;
export const CLASSIFIER_LABELS = ['negative', 'neutral', 'positive'] as const;

/** A fixed pseudo-random value per (token id, channel), in [-1, 1): the fake model's embedding table. */
export function tableValue(id: number, channel: number): number {
  let x = (id * 73856093) ^ (channel * 19349663) ^ 0x9e3779b9;
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  return (((x ^ (x >>> 16)) >>> 0) / 2 ** 32) * 2 - 1;
}

/** The fake forward pass, one token: its table row, shifted by position and token type so those show in the output. */
export function hiddenOf(id: number, position: number, typeId: number, channel: number): number {
  return tableValue(id, channel) + 0.01 * position + 0.1 * typeId;
}

/** Every forward batch the fake model ran: rows and padded length, for batching tests. */
export interface ForwardLog {
  readonly batches: { rows: number; length: number; ids: number[][]; mask: number[][] }[];
}

/**
 * A forward model computed in JS, so route and engine tests need no ONNX file: last_hidden_state
 * from hiddenOf, and for classifiers and rerankers `logits` as fixed weights over the mean of
 * the real tokens' hidden states; sparse models answer `logits` over the vocabulary per token.
 */
export function fakeForward(task: TextTask, vocabSize: number, log: ForwardLog = { batches: [] }): InferenceModel {
  const inputs = ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({ name, datatype: 'INT64' as const, shape: [-1, -1] }));
  const outputName = task === 'classify' || task === 'rerank' || task === 'sparse' ? 'logits' : 'last_hidden_state';
  const info: InferenceModelInfo = {
    name: `fake-${task}`, version: '1', platform: 'test', inputs, outputs: [{ name: outputName, datatype: 'FP32', shape: [-1, -1, -1] }],
    maxBatchSize: 0, config: {}, decoupled: false,
  };
  return {
    info,
    ready: () => true,
    async infer(request: InferRequest): Promise<InferResponse> {
      const get = (name: string) => request.inputs.find((t) => t.name === name)!;
      const [rows, length] = get('input_ids').shape;
      const ids = Array.from(get('input_ids').data as BigInt64Array, Number);
      const mask = Array.from(get('attention_mask').data as BigInt64Array, Number);
      const types = Array.from(get('token_type_ids').data as BigInt64Array, Number);
      const at = (r: number, t: number) => r * length + t;
      log.batches.push({ rows, length, ids: split(ids, length), mask: split(mask, length) });
      // Positions count real tokens only, as padBatch's position ids do, so left padding changes nothing.
      const position = (r: number, t: number) => mask.slice(r * length, at(r, t)).reduce((a, b) => a + b, 0);
      let output: Tensor;
      if (task === 'embed') {
        const data = new Float32Array(rows * length * HIDDEN);
        for (let r = 0; r < rows; r++) for (let t = 0; t < length; t++) for (let c = 0; c < HIDDEN; c++) data[at(r, t) * HIDDEN + c] = hiddenOf(ids[at(r, t)], position(r, t), types[at(r, t)], c);
        output = createTensor('last_hidden_state', 'FP32', [rows, length, HIDDEN], data);
      } else if (task === 'sparse') {
        const data = new Float32Array(rows * length * vocabSize);
        for (let r = 0; r < rows; r++) for (let t = 0; t < length; t++) for (let v = 0; v < vocabSize; v++) data[at(r, t) * vocabSize + v] = v === ids[at(r, t)] ? 2 : tableValue(v, ids[at(r, t)]) - 0.9;
        output = createTensor('logits', 'FP32', [rows, length, vocabSize], data);
      } else {
        const width = task === 'rerank' ? 1 : CLASSIFIER_LABELS.length;
        const data = new Float32Array(rows * width);
        // The mean over real tokens of hidden · w_k: a classifier head that sees every token, so truncation and pairs show.
        for (let r = 0; r < rows; r++) {
          const real = mask.slice(r * length, (r + 1) * length).reduce((a, b) => a + b, 0);
          for (let k = 0; k < width; k++) {
            let sum = 0;
            for (let t = 0; t < length; t++) {
              if (mask[at(r, t)] === 0) continue;
              for (let c = 0; c < HIDDEN; c++) sum += hiddenOf(ids[at(r, t)], position(r, t), types[at(r, t)], c) * tableValue(1000 + k, c);
            }
            data[r * width + k] = sum / real;
          }
        }
        output = createTensor('logits', 'FP32', [rows, width], data);
      }
      return { modelName: info.name, modelVersion: '1', outputs: [output] };
    },
  };
}

/**
 * A text model's forward model over a tensor model computed in JS: one instance, on an engine of its
 * own, that runs the instance side of a forward batch (padding, pooling) around `model.infer`, as a
 * folder model's worker runs it around its backend session.
 */
export function forwardOver(model: Pick<InferenceModel, 'info' | 'infer'>, instanceCount = 1, recorder = new InferenceRecorder()): TextForward {
  const outputs = model.info.outputs.map((o) => o.name);
  const engine = new InstanceEngine({
    name: model.info.name, version: '1', instanceCount, recorder, log: () => undefined,
    factory: (index) => ({
      ...noStreams,
      index,
      canQueueBehind: true,
      start: async () => undefined,
      stop: async () => undefined,
      execute: async (call) => {
        if (call.kind !== 'text-forward') throw new Error(`a text forward instance got a ${call.kind} call`);
        const computeStartMs = now();
        const results = await runTextForward(call, model.info.inputs, outputs, async (inputs) => (await model.infer({ inputs: [...inputs] })).outputs);
        return { results, computeStartMs, computeEndMs: now() };
      },
    }),
  });
  void engine.start();
  return { engine, inputs: model.info.inputs, maxRows: model.info.maxBatchSize, ready: () => true };
}

function split(values: number[], length: number): number[][] {
  return Array.from({ length: values.length / length }, (_, r) => values.slice(r * length, (r + 1) * length));
}

export interface TextModelOverrides {
  readonly name?: string;
  readonly limits?: Partial<TextLimits>;
  readonly pooling?: PoolingMode;
  readonly maxInputLength?: number;
  readonly prompts?: Readonly<Record<string, string>>;
  readonly log?: ForwardLog;
  readonly instanceCount?: number;
}

/** A real TextEngine (real tokenizer, batcher, pooling) over the fake forward pass. */
export async function textModelFor(task: TextTask, overrides: TextModelOverrides = {}): Promise<TextEngine> {
  const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
  const spec: TextModelSpec = {
    name: overrides.name ?? `tiny-${task}`,
    modelId: `test/${task}`,
    task,
    pooling: overrides.pooling ?? (task === 'sparse' ? 'splade' : 'cls'),
    maxInputLength: overrides.maxInputLength ?? 32,
    prompts: overrides.prompts ?? { query: 'query: ', passage: 'passage: ' },
    labels: task === 'classify' ? CLASSIFIER_LABELS : task === 'rerank' ? ['LABEL_0'] : [],
  };
  return new TextEngine(spec, tokenizer, forwardOver(fakeForward(task, tokenizer.vocabSize, overrides.log), overrides.instanceCount ?? 1), {
    limits: { ...DEFAULT_TEXT_LIMITS, ...overrides.limits },
    computeType: 'cpu',
  });
}

export function textModelSetOf(models: readonly TextEngine[]): TextModelSet {
  return new TextModelSet(models);
}
