import { createError } from '../errors/index.js';
import { DATATYPE_INFO } from './datatype-info.js';
import { numberToBf16Bits, numberToFp16Bits } from './half-float.js';
import type { Datatype, Tensor, TensorData, TensorSpec } from '../spec/tensor.js';

/**
 * One element as JS code or JSON gives it: booleans for BOOL, numbers for the numeric types,
 * bigints or decimal strings for INT64/UINT64, strings (UTF-8) or bytes for BYTES.
 */
export type TensorValue = number | bigint | boolean | string | Uint8Array;

type SmallIntDatatype = 'UINT8' | 'UINT16' | 'UINT32' | 'INT8' | 'INT16' | 'INT32';
type SmallIntArray = Uint8Array | Uint16Array | Uint32Array | Int8Array | Int16Array | Int32Array;

interface SmallIntType {
  readonly min: number;
  readonly max: number;
  readonly arrayType: new (length: number) => SmallIntArray;
}

const SMALL_INT_TYPES: Readonly<Record<SmallIntDatatype, SmallIntType>> = {
  UINT8: { min: 0, max: 0xff, arrayType: Uint8Array },
  UINT16: { min: 0, max: 0xffff, arrayType: Uint16Array },
  UINT32: { min: 0, max: 0xffffffff, arrayType: Uint32Array },
  INT8: { min: -0x80, max: 0x7f, arrayType: Int8Array },
  INT16: { min: -0x8000, max: 0x7fff, arrayType: Int16Array },
  INT32: { min: -0x80000000, max: 0x7fffffff, arrayType: Int32Array },
};

const BIGINT_RANGES = {
  INT64: [-(2n ** 63n), 2n ** 63n - 1n],
  UINT64: [0n, 2n ** 64n - 1n],
} as const;

const utf8 = new TextEncoder();

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}

/** True when `shape` fits `expected`, where -1 in `expected` accepts any size of that dimension. */
export function shapeMatches(expected: readonly number[], shape: readonly number[]): boolean {
  return expected.length === shape.length && expected.every((dim, i) => dim === -1 || dim === shape[i]);
}

/** True when two declared shapes can describe the same tensor: -1 on either side accepts any size. */
export function shapesCompatible(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === -1 || b[i] === -1 || dim === b[i]);
}

/** A declared shape as tensors carry it: with a variable batch dimension in front when the model batches (max_batch_size > 0). */
export function withBatchDim(dims: readonly number[], maxBatchSize: number): readonly number[] {
  return maxBatchSize > 0 ? [-1, ...dims] : dims;
}

export function checkTensorAgainstSpec(tensor: Tensor, spec: TensorSpec): void {
  if (tensor.datatype !== spec.datatype) {
    throw createError('SF_ERR_TENSOR_DATATYPE', tensor.name, spec.datatype, tensor.datatype);
  }
  if (!shapeMatches(spec.shape, tensor.shape)) {
    throw createError('SF_ERR_TENSOR_SHAPE', tensor.name, formatShape(spec.shape), formatShape(tensor.shape));
  }
}

/** A request shape: every dimension a known, non-negative integer. */
export function validateShape(name: string, shape: unknown): number[] {
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw createError('SF_ERR_TENSOR_DATA', name, `shape must be a list of non-negative integers, got ${describe(shape)}.`);
  }
  return shape as number[];
}

/**
 * Builds a tensor, checking that the element count matches the shape and every value fits the
 * datatype. Typed-array data of the right kind is kept as is (no copy); plain arrays are converted.
 */
export function createTensor(
  name: string,
  datatype: Datatype,
  shape: readonly number[],
  data: TensorData | readonly TensorValue[],
): Tensor {
  const dims = validateShape(name, [...shape]);
  const stored = ArrayBuffer.isView(data) ? checkTypedData(name, datatype, data) : toTensorData(name, datatype, data);
  const expected = elementCount(dims);
  if (stored.length !== expected) {
    throw createError('SF_ERR_TENSOR_DATA', name, `shape ${formatShape(dims)} needs ${expected} elements, got ${stored.length}.`);
  }
  return { name, datatype, shape: dims, data: stored };
}

function checkTypedData(name: string, datatype: Datatype, data: Exclude<TensorData, Uint8Array[]>): TensorData {
  const arrayType = DATATYPE_INFO[datatype].arrayType;
  if (arrayType === undefined || !(data instanceof arrayType)) {
    const wanted = arrayType === undefined ? 'an array of Uint8Array or string elements' : withArticle(arrayType.name);
    throw createError('SF_ERR_TENSOR_DATA', name, `${datatype} data must be ${wanted}, got ${withArticle(data.constructor.name)}.`);
  }
  if (datatype === 'BOOL') {
    const bad = (data as Uint8Array).findIndex((v) => v > 1);
    if (bad >= 0) throw elementError(name, bad, (data as Uint8Array)[bad], 'BOOL elements must be 0 or 1');
  }
  return data;
}

/** Converts plain values to the datatype's storage, refusing values that do not fit. */
function toTensorData(name: string, datatype: Datatype, values: readonly unknown[]): TensorData {
  switch (datatype) {
    case 'BOOL':
      return Uint8Array.from(values, (v, i) => {
        if (typeof v !== 'boolean') throw elementError(name, i, v, 'expected true or false');
        return v ? 1 : 0;
      });
    case 'INT64':
    case 'UINT64': {
      const [min, max] = BIGINT_RANGES[datatype];
      const out = datatype === 'INT64' ? new BigInt64Array(values.length) : new BigUint64Array(values.length);
      values.forEach((v, i) => {
        const big = toBigInt(name, i, v);
        if (big < min || big > max) throw elementError(name, i, v, `out of range for ${datatype} [${min}, ${max}]`);
        out[i] = big;
      });
      return out;
    }
    case 'FP16':
    case 'BF16': {
      const encode = datatype === 'FP16' ? numberToFp16Bits : numberToBf16Bits;
      return Uint16Array.from(values, (v, i) => encode(toNumber(name, i, v)));
    }
    case 'FP32':
      return Float32Array.from(values, (v, i) => toNumber(name, i, v));
    case 'FP64':
      return Float64Array.from(values, (v, i) => toNumber(name, i, v));
    case 'BYTES':
      return values.map((v, i) => {
        if (typeof v === 'string') return utf8.encode(v);
        if (v instanceof Uint8Array) return v;
        throw elementError(name, i, v, 'expected a string or bytes');
      });
    default: {
      const { min, max, arrayType } = SMALL_INT_TYPES[datatype];
      const out = new arrayType(values.length);
      values.forEach((v, i) => {
        if (typeof v !== 'number' || !Number.isInteger(v)) throw elementError(name, i, v, 'expected an integer');
        if (v < min || v > max) throw elementError(name, i, v, `out of range for ${datatype} [${min}, ${max}]`);
        out[i] = v;
      });
      return out;
    }
  }
}

function toNumber(name: string, index: number, value: unknown): number {
  if (typeof value !== 'number') throw elementError(name, index, value, 'expected a number');
  return value;
}

function toBigInt(name: string, index: number, value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'number' && Number.isInteger(value)) {
    // JSON.parse has already rounded integers past 2^53, so the value the client meant is unknowable.
    throw elementError(name, index, value, 'beyond ±(2^53-1), where JSON numbers lose precision; send it as a string');
  }
  throw elementError(name, index, value, 'expected an integer, a bigint or a decimal string');
}

function elementError(name: string, index: number, value: unknown, problem: string) {
  return createError('SF_ERR_TENSOR_DATA', name, `element ${index} is ${describe(value)}: ${problem}.`);
}

function withArticle(noun: string): string {
  return `${/^[AEIO]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

function describe(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  return JSON.stringify(value) ?? String(value);
}
