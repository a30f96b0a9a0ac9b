import { createError } from '../errors/index.js';
import type { InferenceModelInfo } from '../inference/inference-model.js';
import { bf16BitsToNumber, fp16BitsToNumber } from '../tensor/half-float.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor, TensorSpec } from '../tensor/tensor.js';

/** One sequence of a forward batch: its token ids and token type ids, as the tokenizer made them. */
export interface TokenSequence {
  readonly ids: Uint32Array;
  readonly typeIds: Uint32Array;
}

/** Where padding goes: right for encoders; left for last-token pooling, so every row's last token sits at the end. */
export type PaddingSide = 'left' | 'right';

/** The input names of the transformer exports TEI's ORT backend feeds (backends/ort/src/lib.rs). */
const INPUT_IDS = 'input_ids';
const ATTENTION_MASK = 'attention_mask';
const TOKEN_TYPE_IDS = 'token_type_ids';
const POSITION_IDS = 'position_ids';
const KNOWN_INPUTS = new Set([INPUT_IDS, ATTENTION_MASK, TOKEN_TYPE_IDS, POSITION_IDS]);

/** A padded batch: the model's input tensors, and the mask (row-major, rows × length) that pooling reads. */
export interface PaddedBatch {
  readonly inputs: Tensor[];
  readonly mask: Uint8Array;
  readonly rows: number;
  readonly length: number;
}

/**
 * Checks that a forward model takes what a transformer export takes: input_ids and attention_mask,
 * optionally token_type_ids and position_ids, each [batch, sequence] of an integer type.
 */
export function checkForwardInputs(modelName: string, info: InferenceModelInfo): void {
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
export function padBatch(sequences: readonly TokenSequence[], info: InferenceModelInfo, side: PaddingSide, padId: number): PaddedBatch {
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
export function fixedSequenceLength(info: InferenceModelInfo): number | undefined {
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
export function floatOutput(outputs: readonly Tensor[], name: string, modelName: string): { data: Float32Array; shape: readonly number[] } {
  const tensor = outputs.find((t) => t.name === name);
  if (!tensor) throw createError('SF_ERR_TEXT_BACKEND', modelName, `the forward pass returned no '${name}' (it returned ${outputs.map((t) => t.name).join(', ') || 'nothing'})`);
  if (tensor.data instanceof Float32Array) return { data: tensor.data, shape: tensor.shape };
  if (tensor.data instanceof Float64Array) return { data: Float32Array.from(tensor.data), shape: tensor.shape };
  if (tensor.datatype === 'FP16' || tensor.datatype === 'BF16') {
    const widen = tensor.datatype === 'FP16' ? fp16BitsToNumber : bf16BitsToNumber;
    return { data: Float32Array.from(tensor.data as Uint16Array, widen), shape: tensor.shape };
  }
  throw createError('SF_ERR_TEXT_BACKEND', modelName, `'${name}' is ${tensor.datatype}; a text model's outputs are FP32, FP16 or BF16`);
}
