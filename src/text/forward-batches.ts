import { createError, ServeFnError } from '../errors/index.js';
import type { InferenceModel, InferenceModelInfo } from '../inference/inference-model.js';
import { normalizeBatchPolicy } from '../runtime/batch-policy.js';
import { DynamicBatcher, type BatchEntry } from '../runtime/dynamic-batcher.js';
import { bf16BitsToNumber, fp16BitsToNumber } from '../tensor/half-float.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor, TensorSpec } from '../tensor/tensor.js';
import { poolRows, spladeRows, type PoolingMode } from './pooling.js';
import type { TextMetrics } from './text-metrics.js';

/** What one sequence needs from the forward pass. */
export type Want = 'pooled' | 'tokens' | 'logits' | 'sparse';
export type Row = Float32Array | Float32Array[] | SparseValue[];
export interface SparseValue {
  readonly index: number;
  readonly value: number;
}

export interface QueuedSequence extends TokenSequence {
  readonly want: Want;
}
export interface SequenceResult {
  readonly row: Row;
  readonly queueMs: number;
  readonly inferenceMs: number;
}

/** One sequence of a forward batch: its token ids and token type ids, as the tokenizer made them. */
export interface TokenSequence {
  readonly ids: Uint32Array;
  readonly typeIds: Uint32Array;
}

/** Where padding goes: right for encoders; left for last-token pooling, so every row's last token sits at the end. */
type PaddingSide = 'left' | 'right';

/** The input names of the transformer exports TEI's ORT backend feeds (backends/ort/src/lib.rs). */
const INPUT_IDS = 'input_ids';
const ATTENTION_MASK = 'attention_mask';
const TOKEN_TYPE_IDS = 'token_type_ids';
const POSITION_IDS = 'position_ids';
const KNOWN_INPUTS = new Set([INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS, POSITION_IDS]);

/** A padded batch: the model's input tensors, and the mask (row-major, rows × length) that pooling reads. */
interface PaddedBatch {
  readonly inputs: Tensor[];
  readonly mask: Uint8Array;
  readonly rows: number;
  readonly length: number;
}

/**
 * Checks that a forward model takes what a transformer export takes: input_ids and attention_mask,
 * optionally token_type_ids and position_ids, each [batch, sequence] of an integer type.
 */
function checkForwardInputs(modelName: string, info: InferenceModelInfo): void {
  const names = new Set(info.inputs.map((s) => s.name));
  for (const required of [INPUT_IDS, ATTENTION_MASK]) {
    if (!names.has(required)) throw createError('SF_ERR_TEXT_MODEL_INVALID', modelName, `needs a forward model with inputs input_ids and attention_mask; '${info.name}' has ${[...names].join(', ') || 'none'}`);
  }
  for (const spec of info.inputs) {
    if (!KNOWN_INPUTS.has(spec.name) && !spec.optional) {
      throw createError('SF_ERR_TEXT_MODEL_INVALID', modelName, `cannot feed the forward model's input '${spec.name}' (it feeds ${[...KNOWN_INPUTS].join(', ')})`);
    }
    if (!/^U?INT(32|64)$/.test(spec.datatype)) throw createError('SF_ERR_TEXT_MODEL_INVALID', modelName, `the forward model's input '${spec.name}' is ${spec.datatype}; token inputs are INT64 or INT32`);
  }
}

/**
 * Pads sequences to the longest (or to the model's fixed length) into the forward model's inputs. Position ids count real tokens
 * only, so a left-padded row's first token is at position 0, as it is unpadded.
 */
function padBatch(sequences: readonly TokenSequence[], info: InferenceModelInfo, side: PaddingSide, padId: number): PaddedBatch {
  const rows = sequences.length;
  const length = fixedSequenceLength(info) ?? sequences.reduce((max, s) => Math.max(max, s.ids.length), 0);
  const ids = new Array<number>(rows * length).fill(padId);
  const types = new Array<number>(rows * length).fill(0);
  const positions = new Array<number>(rows * length).fill(0);
  const mask = new Uint8Array(rows * length);
  sequences.forEach((sequence, row) => {
    const start = row * length + (side === 'left' ? length - sequence.ids.length : 0);
    for (let i = 0; i < sequence.ids.length; i++) {
      ids[start + i] = sequence.ids[i];
      types[start + i] = sequence.typeIds[i] ?? 0;
      positions[start + i] = i;
      mask[start + i] = 1;
    }
  });
  const values: Record<string, ArrayLike<number>> = { [INPUT_IDS]: ids, [ATTENTION_MASK]: mask, [TOKEN_TYPE_IDS]: types, [POSITION_IDS]: positions };
  const inputs = info.inputs.filter((spec) => KNOWN_INPUTS.has(spec.name)).map((spec) => integerTensor(spec, [rows, length], values[spec.name]));
  return { inputs, mask, rows, length };
}

/**
 * The sequence length a model compiled for one (an Ascend .om exported with a static sequence
 * dimension, e.g. ATC `--input_shape=input_ids:-1,128`) takes: every batch is padded to it. The
 * NPU backend pads the rows to the model's batch gears itself. Undefined when any length works.
 */
function fixedSequenceLength(info: InferenceModelInfo): number | undefined {
  const shape = info.inputs.find((s) => s.name === INPUT_IDS)?.shape;
  const last = shape?.[shape.length - 1];
  return last !== undefined && last > 0 ? last : undefined;
}

function integerTensor(spec: TensorSpec, shape: readonly number[], values: ArrayLike<number>): Tensor {
  const data = spec.datatype === 'INT64' ? BigInt64Array.from(Array.from(values, BigInt))
    : spec.datatype === 'UINT64' ? BigUint64Array.from(Array.from(values, BigInt))
      : spec.datatype === 'INT32' ? Int32Array.from(values) : Uint32Array.from(values);
  return createTensor(spec.name, spec.datatype, shape, data);
}

/** A float output as FP32 numbers, with its shape: an FP16 or BF16 export (`--dtype float16`) is widened here. */
function floatOutput(outputs: readonly Tensor[], name: string): { data: Float32Array; shape: readonly number[] } {
  const tensor = outputs.find((t) => t.name === name);
  if (!tensor) throw new Error(`the forward pass returned no '${name}' (it returned ${outputs.map((t) => t.name).join(', ') || 'nothing'})`);
  if (tensor.data instanceof Float32Array) return { data: tensor.data, shape: tensor.shape };
  if (tensor.data instanceof Float64Array) return { data: Float32Array.from(tensor.data), shape: tensor.shape };
  if (tensor.datatype === 'FP16' || tensor.datatype === 'BF16') {
    const widen = tensor.datatype === 'FP16' ? fp16BitsToNumber : bf16BitsToNumber;
    return { data: Float32Array.from(tensor.data as Uint16Array, widen), shape: tensor.shape };
  }
  throw new Error(`'${name}' is ${tensor.datatype}; a text model's outputs are FP32, FP16 or BF16`);
}

/**
 * With --batch-by-length, the share of a batch's padded tokens that must be real: a batch of texts
 * within about 1.25× of each other's length. A forward pass on a CPU costs about its padded tokens,
 * so the queue runs as several well-filled batches rather than one half padding.
 */
const BATCH_FILL = 0.8;

export interface ForwardBatcherOptions {
  readonly pooling: PoolingMode;
  readonly padId: number;
  readonly maxBatchTokens: number;
  readonly maxBatchRequests?: number;
  /** Form each batch around the oldest sequence with the queued ones nearest its length (BATCH_FILL). */
  readonly batchByLength: boolean;
  /** Instances of the forward model: how many forward batches may run at once. */
  readonly instanceCount: number;
  readonly metrics?: TextMetrics;
  /** Where a failed forward pass is reported, with its error. */
  readonly log?: (message: string, err: unknown) => void;
}

/**
 * The forward batches of one text model: sequences queue one by one, the dynamic batcher closes a
 * batch at the padded token budget (rows × longest, TEI's --max-batch-tokens) or the row limit,
 * the batch is padded (left for last-token pooling, so every row ends on its last token), run on
 * the forward model's instances, and cut back into one row per sequence: pooled, per token, logits
 * or SPLADE, as each sequence asked.
 */
export class ForwardBatcher {
  private readonly batcher: DynamicBatcher<QueuedSequence, SequenceResult>;
  private readonly padding: PaddingSide;
  /** The length every batch is padded to, for a model compiled for one. */
  readonly fixedLength: number | undefined;
  private running = 0;
  /** Embedding width, once a forward pass has shown it. */
  width: number | undefined;

  constructor(
    private readonly name: string,
    private readonly forward: InferenceModel,
    private readonly options: ForwardBatcherOptions,
  ) {
    checkForwardInputs(name, forward.info);
    this.fixedLength = fixedSequenceLength(forward.info);
    this.padding = options.pooling === 'last-token' ? 'left' : 'right';
    const { instanceCount } = options;
    const forwardRows = forward.info.maxBatchSize > 0 ? forward.info.maxBatchSize : Infinity;
    const maxBatchSize = Math.min(options.maxBatchRequests ?? options.maxBatchTokens, forwardRows);
    const fixed = this.fixedLength;
    this.batcher = new DynamicBatcher(`${name} forward batches`, normalizeBatchPolicy({ maxBatchSize, maxQueueDelayUs: 0 }, name), {
      idleInstances: () => Math.max(0, instanceCount - this.running),
      // A full batch waits behind each running one, so an instance never idles between batches.
      queueBehindInstances: () => Math.max(0, 2 * instanceCount - this.running),
      execute: (batch) => this.runBatch(batch),
      budget: { limit: options.maxBatchTokens, ...(options.batchByLength && fixed === undefined ? { minFill: BATCH_FILL } : {}), cost: (sequence) => fixed ?? sequence.ids.length },
    });
  }

  ready(): boolean {
    return this.forward.ready();
  }

  /** Queues a request's sequences together, so they can share batches; one result each, in order. */
  submitAll(sequences: readonly QueuedSequence[]): Promise<SequenceResult>[] {
    const results = this.batcher.submitAll(sequences);
    this.options.metrics?.queued(this.name, this.batcher.pendingCount);
    return results;
  }

  /** Stops taking sequences; resolves once every queued and running batch has ended. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  /** One forward batch: padded, run on an instance, and cut into one row per sequence. */
  private async runBatch(batch: readonly BatchEntry<QueuedSequence>[]): Promise<SequenceResult[]> {
    const dispatchedUs = performance.now() * 1000;
    const sequences = batch.map((entry) => entry.payload);
    this.options.metrics?.queued(this.name, this.batcher.pendingCount);
    const padded = padBatch(sequences, this.forward.info, this.padding, this.options.padId);
    this.options.metrics?.batched(this.name, padded.rows, padded.rows * padded.length);
    this.running++;
    try {
      const response = await this.forward.infer({ inputs: padded.inputs });
      const inferenceMs = performance.now() - dispatchedUs / 1000;
      const rows = this.rowsOf(response.outputs, padded.mask, padded.length, sequences);
      return rows.map((row, i) => ({ row, inferenceMs, queueMs: Math.max(0, dispatchedUs - batch[i].enqueuedAtUs) / 1000 }));
    } catch (err) {
      // A server going down (503) stays what it is; anything else is the backend's failure (TEI's
      // 424), logged here with its cause, and answered without it: it may carry the model's internals.
      if (err instanceof ServeFnError && err.statusCode === 503) throw err;
      this.options.log?.(`text model '${this.name}': the forward pass of ${sequences.length} inputs failed`, err);
      throw createError('SF_ERR_TEXT_BACKEND', this.name, { cause: err });
    } finally {
      this.running--;
      this.batcher.notifyIdle();
    }
  }

  /** Each sequence's row of what it asked for, read from the forward model's outputs. */
  private rowsOf(outputs: readonly Tensor[], mask: Uint8Array, length: number, sequences: readonly QueuedSequence[]): Row[] {
    const rows = sequences.length;
    const names = new Set(outputs.map((t) => t.name));
    const cache = new Map<Want, Row[]>();
    const rowsFor = (want: Want): Row[] => {
      const cached = cache.get(want);
      if (cached) return cached;
      let made: Row[];
      if (want === 'logits' || (want === 'pooled' && names.has('sentence_embedding'))) {
        const { data, shape } = floatOutput(outputs, want === 'logits' ? 'logits' : 'sentence_embedding');
        const width = data.length / rows;
        if (shape.length !== 2 || shape[0] !== rows) throw new Error(`expected a [${rows}, width] output, got [${shape.join(', ')}]`);
        made = Array.from({ length: rows }, (_, r) => data.slice(r * width, (r + 1) * width));
      } else {
        const output = want === 'sparse' ? 'logits' : 'last_hidden_state';
        const { data, shape } = floatOutput(outputs, output);
        if (shape.length !== 3 || shape[0] !== rows || shape[1] !== length) throw new Error(`expected '${output}' of shape [${rows}, ${length}, width], got [${shape.join(', ')}]`);
        const dims = [rows, length, shape[2]] as const;
        made = want === 'sparse' ? spladeRows(data, dims, mask) : want === 'pooled' ? poolRows(data, dims, mask, this.options.pooling) : tokenRows(data, dims, mask);
      }
      cache.set(want, made);
      return made;
    };
    const result = sequences.map((sequence, r) => rowsFor(sequence.want)[r]);
    const pooled = result.find((row, r) => sequences[r].want === 'pooled') as Float32Array | undefined;
    if (pooled) this.width = pooled.length;
    return result;
  }
}

/** The hidden state of each real (unpadded) token of each row. */
function tokenRows(hidden: Float32Array, [rows, length, width]: readonly [number, number, number], mask: Uint8Array): Float32Array[][] {
  return Array.from({ length: rows }, (_, r) => {
    const tokens: Float32Array[] = [];
    for (let t = 0; t < length; t++) if (mask[r * length + t] === 1) tokens.push(hidden.slice((r * length + t) * width, (r * length + t + 1) * width));
    return tokens;
  });
}

