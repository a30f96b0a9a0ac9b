import { createError } from '../errors/index.js';
import type { PoolingModeName } from '../metadata/records.js';
import type { ForwardRow, ForwardWant, TextForwardCall, WireResult } from '../wire/wire-format.js';
import { bf16BitsToNumber, fp16BitsToNumber } from '../tensor/half-float.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';

/**
 * The instance side of a text forward batch, as TEI's backend does it (backends/ort/src/lib.rs,
 * `fn embed`): the token ids are padded into the model's inputs, the forward pass runs, and each
 * sequence gets back only what it asked for, pooled (sentence-transformers' Pooling and
 * SpladePooling, https://sbert.net/docs/package_reference/sentence_transformer/models.html#pooling),
 * per token, or as logits. Nothing as wide as the hidden state crosses back to the HTTP thread.
 */

/** The input names of the transformer exports TEI's ORT backend feeds (backends/ort/src/lib.rs). */
const INPUT_IDS = 'input_ids';
const ATTENTION_MASK = 'attention_mask';
const TOKEN_TYPE_IDS = 'token_type_ids';
const POSITION_IDS = 'position_ids';
const KNOWN_INPUTS = new Set([INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS, POSITION_IDS]);

/** Runs the model on padded inputs, giving the named outputs. */
export type ForwardRun = (inputs: readonly Tensor[], outputs: readonly string[]) => Promise<readonly Tensor[]>;

/**
 * Checks that a forward model takes what a transformer export takes: input_ids and attention_mask,
 * optionally token_type_ids and position_ids, each [batch, sequence] of an integer type.
 */
export function checkForwardInputs(modelName: string, inputs: readonly TensorSpec[]): void {
  const names = new Set(inputs.map((s) => s.name));
  for (const required of [INPUT_IDS, ATTENTION_MASK]) {
    if (!names.has(required)) throw createError('SF_ERR_TEXT_MODEL_INVALID', modelName, `needs a forward model with inputs input_ids and attention_mask; it has ${[...names].join(', ') || 'none'}`);
  }
  for (const spec of inputs) {
    if (!KNOWN_INPUTS.has(spec.name) && !spec.optional) {
      throw createError('SF_ERR_TEXT_MODEL_INVALID', modelName, `cannot feed the forward model's input '${spec.name}' (it feeds ${[...KNOWN_INPUTS].join(', ')})`);
    }
    if (!/^U?INT(32|64)$/.test(spec.datatype)) throw createError('SF_ERR_TEXT_MODEL_INVALID', modelName, `the forward model's input '${spec.name}' is ${spec.datatype}; token inputs are INT64 or INT32`);
  }
}

/**
 * The sequence length a model compiled for one (an Ascend .om exported with a static sequence
 * dimension, e.g. ATC `--input_shape=input_ids:-1,128`) takes: every batch is padded to it. The
 * NPU backend pads the rows to the model's batch gears itself. Undefined when any length works.
 */
export function fixedSequenceLength(inputs: readonly TensorSpec[]): number | undefined {
  const shape = inputs.find((s) => s.name === INPUT_IDS)?.shape;
  const last = shape?.[shape.length - 1];
  return last !== undefined && last > 0 ? last : undefined;
}

/** One forward batch: padded, run, and cut into one result per sequence. A thrown error fails the whole batch. */
export async function runTextForward(call: TextForwardCall, inputs: readonly TensorSpec[], outputNames: readonly string[], run: ForwardRun): Promise<WireResult[]> {
  const padded = padBatch(call, inputs);
  const pooledFrom = outputNames.includes('sentence_embedding') ? 'sentence_embedding' : 'last_hidden_state';
  const outputOf = (want: ForwardWant): string => (want === 'pooled' ? pooledFrom : want === 'tokens' ? 'last_hidden_state' : 'logits');
  const wanted = [...new Set(call.sequences.map((s) => outputOf(s.want)))];
  const outputs = await run(padded.inputs, wanted);
  const rows = rowsOf(outputs, padded, call);
  return rows.map((value) => ({ ok: true, value }));
}

/** A padded batch: the model's input tensors, and the mask (row-major, rows × length) that pooling reads. */
interface PaddedBatch {
  readonly inputs: Tensor[];
  readonly mask: Uint8Array;
  readonly rows: number;
  readonly length: number;
}

/**
 * Pads sequences to the longest (or to the model's fixed length): right for encoders, left for
 * last-token pooling, so every row's last token sits at the end. Position ids count real tokens
 * only, so a left-padded row's first token is at position 0, as it is unpadded.
 */
function padBatch(call: TextForwardCall, inputs: readonly TensorSpec[]): PaddedBatch {
  const { sequences } = call;
  const left = call.pooling === 'last-token';
  const rows = sequences.length;
  const length = fixedSequenceLength(inputs) ?? sequences.reduce((max, s) => Math.max(max, s.ids.length), 0);
  const size = rows * length;
  const ids = new Int32Array(size).fill(call.padId);
  const types = new Int32Array(size);
  const positions = new Int32Array(size);
  const mask = new Uint8Array(size);
  sequences.forEach((sequence, row) => {
    const start = row * length + (left ? length - sequence.ids.length : 0);
    for (let i = 0; i < sequence.ids.length; i++) {
      ids[start + i] = sequence.ids[i]!;
      types[start + i] = sequence.typeIds[i] ?? 0;
      positions[start + i] = i;
      mask[start + i] = 1;
    }
  });
  const values: Record<string, ArrayLike<number>> = { [INPUT_IDS]: ids, [ATTENTION_MASK]: mask, [TOKEN_TYPE_IDS]: types, [POSITION_IDS]: positions };
  const tensors = inputs.filter((spec) => KNOWN_INPUTS.has(spec.name)).map((spec) => integerTensor(spec, [rows, length], values[spec.name]!));
  return { inputs: tensors, mask, rows, length };
}

function integerTensor(spec: TensorSpec, shape: readonly number[], values: ArrayLike<number>): Tensor {
  let data: BigInt64Array | BigUint64Array | Int32Array | Uint32Array;
  if (spec.datatype === 'INT64' || spec.datatype === 'UINT64') {
    data = spec.datatype === 'INT64' ? new BigInt64Array(values.length) : new BigUint64Array(values.length);
    for (let i = 0; i < values.length; i++) data[i] = BigInt(values[i]!);
  } else {
    data = spec.datatype === 'INT32' ? Int32Array.from(values) : Uint32Array.from(values);
  }
  return createTensor(spec.name, spec.datatype, shape, data);
}

/** A float output as FP32 numbers, with its shape: an FP16 or BF16 export (`--dtype float16`) is widened here. */
function floatOutput(outputs: readonly Tensor[], name: string): { data: Float32Array; shape: readonly number[] } {
  const tensor = outputs.find((t) => t?.name === name);
  if (!tensor) throw new Error(`the forward pass returned no '${name}' (it returned ${outputs.map((t) => t?.name).join(', ') || 'nothing'})`);
  if (tensor.data instanceof Float32Array) return { data: tensor.data, shape: tensor.shape };
  if (tensor.data instanceof Float64Array) return { data: Float32Array.from(tensor.data), shape: tensor.shape };
  if (tensor.datatype === 'FP16' || tensor.datatype === 'BF16') {
    const widen = tensor.datatype === 'FP16' ? fp16BitsToNumber : bf16BitsToNumber;
    return { data: Float32Array.from(tensor.data as Uint16Array, widen), shape: tensor.shape };
  }
  throw new Error(`'${name}' is ${tensor.datatype}; a text model's outputs are FP32, FP16 or BF16`);
}

/** Each sequence's row of what it asked for, read from the forward model's outputs. */
function rowsOf(outputs: readonly Tensor[], padded: PaddedBatch, call: TextForwardCall): ForwardRow[] {
  const { rows, length, mask } = padded;
  const names = new Set(outputs.map((t) => t?.name));
  const cache = new Map<ForwardWant, ForwardRow[]>();
  const rowsFor = (want: ForwardWant): ForwardRow[] => {
    const cached = cache.get(want);
    if (cached) return cached;
    let made: ForwardRow[];
    if (want === 'logits' || (want === 'pooled' && names.has('sentence_embedding'))) {
      const { data, shape } = floatOutput(outputs, want === 'logits' ? 'logits' : 'sentence_embedding');
      const width = data.length / rows;
      if (shape.length !== 2 || shape[0] !== rows) throw new Error(`expected a [${rows}, width] output, got [${shape.join(', ')}]`);
      made = Array.from({ length: rows }, (_, r) => data.slice(r * width, (r + 1) * width));
    } else {
      const output = want === 'sparse' ? 'logits' : 'last_hidden_state';
      const { data, shape } = floatOutput(outputs, output);
      if (shape.length !== 3 || shape[0] !== rows || shape[1] !== length) throw new Error(`expected '${output}' of shape [${rows}, ${length}, width], got [${shape.join(', ')}]`);
      const dims = [rows, length, shape[2]!] as const;
      made = want === 'sparse' ? spladeRows(data, dims, mask) : want === 'pooled' ? poolRows(data, dims, mask, call.pooling) : tokenRows(data, dims, mask);
    }
    cache.set(want, made);
    return made;
  };
  return call.sequences.map((sequence, r) => rowsFor(sequence.want)[r]!);
}

/** The hidden state of each real (unpadded) token of each row. */
function tokenRows(hidden: Float32Array, [rows, length, width]: readonly [number, number, number], mask: Uint8Array): Float32Array[][] {
  return Array.from({ length: rows }, (_, r) => {
    const tokens: Float32Array[] = [];
    for (let t = 0; t < length; t++) if (mask[r * length + t] === 1) tokens.push(hidden.slice((r * length + t) * width, (r * length + t + 1) * width));
    return tokens;
  });
}

/**
 * hidden: [rows, length, width] row-major; mask: [rows, length], 1 = real token. One vector of
 * `width` per row. A row without real tokens pools to zeros. 'cls' takes the first real token and
 * 'last-token' the last one, so both work for right and left padding. 'weighted-mean' gives the
 * k-th real token weight k (sentence-transformers weights positions 1..length, which is the same
 * for right padding and keeps left-padded rows equal to unpadded ones). 'splade' is the dense form
 * of {@link spladeRows}. Sums are kept in float64 so long inputs lose no precision before the
 * float32 result; each token's row is read in memory order, so a wide batch pools in one pass.
 */
export function poolRows(
  hidden: Float32Array,
  shape: readonly [number, number, number],
  mask: ArrayLike<number | bigint>,
  mode: PoolingModeName,
): Float32Array[] {
  const [rows, length, width] = shape;
  if (hidden.length !== rows * length * width) throw new RangeError(`hidden has ${hidden.length} values, shape [${shape.join(', ')}] needs ${rows * length * width}`);
  if (mask.length !== rows * length) throw new RangeError(`mask has ${mask.length} values, [${rows}, ${length}] needs ${rows * length}`);
  const out: Float32Array[] = [];
  for (let row = 0; row < rows; row++) {
    const real: number[] = [];
    for (let t = 0; t < length; t++) if (Number(mask[row * length + t]) !== 0) real.push(t);
    out.push(real.length === 0 ? new Float32Array(width) : poolRow(hidden, row * length * width, width, real, mode));
  }
  return out;
}

function poolRow(hidden: Float32Array, rowStart: number, width: number, real: readonly number[], mode: PoolingModeName): Float32Array {
  if (mode === 'cls' || mode === 'last-token') {
    const t = mode === 'cls' ? real[0]! : real[real.length - 1]!;
    return hidden.slice(rowStart + t * width, rowStart + (t + 1) * width);
  }
  if (mode === 'max' || mode === 'splade') {
    const best = new Float32Array(width).fill(mode === 'max' ? -Infinity : 0);
    for (const t of real) {
      const at = rowStart + t * width;
      for (let i = 0; i < width; i++) {
        const v = mode === 'max' ? hidden[at + i]! : Math.log1p(Math.max(0, hidden[at + i]!));
        if (v > best[i]!) best[i] = v;
      }
    }
    return best;
  }
  const sums = new Float64Array(width);
  let weights = 0;
  for (let k = 0; k < real.length; k++) {
    const weight = mode === 'weighted-mean' ? k + 1 : 1;
    const at = rowStart + real[k]! * width;
    for (let i = 0; i < width; i++) sums[i] += weight * hidden[at + i]!;
    weights += weight;
  }
  const vector = new Float32Array(width);
  for (let i = 0; i < width; i++) vector[i] = sums[i]! / weights;
  return vector;
}

/**
 * SPLADE: per vocabulary entry, the max over real tokens of log(1 + relu(logit)); only the
 * non-zero entries, sorted by index (the sparse form TEI's /embed_sparse answers).
 */
export function spladeRows(
  logits: Float32Array,
  shape: readonly [number, number, number],
  mask: ArrayLike<number | bigint>,
): { index: number; value: number }[][] {
  return poolRows(logits, shape, mask, 'splade').map((dense) => {
    const entries: { index: number; value: number }[] = [];
    dense.forEach((value, index) => {
      if (value > 0) entries.push({ index, value });
    });
    return entries;
  });
}
