import { createError } from '../errors/index.js';
import { DATATYPES, type Datatype } from '../spec/tensor.js';

/** The element types ONNX Runtime for Node.js can feed and fetch (its `Tensor.Type`, less int4/uint4). */
export type OrtElementType =
  | 'bool' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'int8' | 'int16' | 'int32' | 'int64'
  | 'float16' | 'float32' | 'float64' | 'string';

export type NumericArrayConstructor =
  | Uint8ArrayConstructor | Uint16ArrayConstructor | Uint32ArrayConstructor | BigUint64ArrayConstructor
  | Int8ArrayConstructor | Int16ArrayConstructor | Int32ArrayConstructor | BigInt64ArrayConstructor
  | Float32ArrayConstructor | Float64ArrayConstructor;

/** Triton model-configuration spelling of a datatype (`TYPE_FP32`, `TYPE_STRING` for BYTES). */
export type ConfigDatatype = `TYPE_${Exclude<Datatype, 'BYTES'>}` | 'TYPE_STRING';

export interface DatatypeInfo {
  readonly datatype: Datatype;
  /** Bytes per element on the wire; undefined for BYTES, whose elements vary in length. */
  readonly byteSize: number | undefined;
  /** The typed array holding the elements; undefined for BYTES (one Uint8Array per element). */
  readonly arrayType: NumericArrayConstructor | undefined;
  /** ONNX Runtime's name for the type; undefined for BF16, which onnxruntime-node cannot feed. */
  readonly ortType: OrtElementType | undefined;
  readonly configName: ConfigDatatype;
}

function info(
  datatype: Datatype,
  byteSize: number | undefined,
  arrayType: NumericArrayConstructor | undefined,
  ortType: OrtElementType | undefined,
): DatatypeInfo {
  const configName = (datatype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${datatype}`) as ConfigDatatype;
  return Object.freeze({ datatype, byteSize, arrayType, ortType, configName });
}

/** KServe v2 required_api.md, tensor data types: sizes, config names and ONNX Runtime names of the KServe v2 datatypes. */
export const DATATYPE_INFO: Readonly<Record<Datatype, DatatypeInfo>> = Object.freeze({
  BOOL: info('BOOL', 1, Uint8Array, 'bool'),
  UINT8: info('UINT8', 1, Uint8Array, 'uint8'),
  UINT16: info('UINT16', 2, Uint16Array, 'uint16'),
  UINT32: info('UINT32', 4, Uint32Array, 'uint32'),
  UINT64: info('UINT64', 8, BigUint64Array, 'uint64'),
  INT8: info('INT8', 1, Int8Array, 'int8'),
  INT16: info('INT16', 2, Int16Array, 'int16'),
  INT32: info('INT32', 4, Int32Array, 'int32'),
  INT64: info('INT64', 8, BigInt64Array, 'int64'),
  FP16: info('FP16', 2, Uint16Array, 'float16'),
  FP32: info('FP32', 4, Float32Array, 'float32'),
  FP64: info('FP64', 8, Float64Array, 'float64'),
  BF16: info('BF16', 2, Uint16Array, undefined),
  BYTES: info('BYTES', undefined, undefined, 'string'),
});

const DATATYPE_SET: ReadonlySet<string> = new Set(DATATYPES);

const BY_ORT_TYPE: ReadonlyMap<string, Datatype> = new Map(
  DATATYPES.flatMap((d) => {
    const ortType = DATATYPE_INFO[d].ortType;
    return ortType === undefined ? [] : [[ortType, d] as const];
  }),
);

const BY_CONFIG_NAME: ReadonlyMap<string, Datatype> = new Map(DATATYPES.map((d) => [DATATYPE_INFO[d].configName, d]));

export function isDatatype(value: unknown): value is Datatype {
  return typeof value === 'string' && DATATYPE_SET.has(value);
}

/** INT64 and UINT64 elements are bigints in JS. */
export function isBigIntDatatype(datatype: Datatype): datatype is 'INT64' | 'UINT64' {
  return datatype === 'INT64' || datatype === 'UINT64';
}

/** Reads a datatype as sent in a request; anything but the exact upper-case names is refused. */
export function parseDatatype(value: unknown, tensorName: string): Datatype {
  if (isDatatype(value)) return value;
  throw createError('SF_ERR_TENSOR_DATA', tensorName, `unknown datatype ${JSON.stringify(value) ?? String(value)}; use one of ${DATATYPES.join(', ')}.`);
}

export function toOrtType(datatype: Datatype, tensorName: string): OrtElementType {
  const ortType = DATATYPE_INFO[datatype].ortType;
  if (ortType === undefined) {
    throw createError('SF_ERR_TENSOR_DATA', tensorName, `datatype ${datatype} is not supported by ONNX Runtime for Node.js (it has no bfloat16 tensors); convert it to FP32 or FP16.`);
  }
  return ortType;
}

export function fromOrtType(ortType: string, tensorName: string): Datatype {
  const datatype = BY_ORT_TYPE.get(ortType);
  if (datatype === undefined) {
    throw createError('SF_ERR_TENSOR_DATA', tensorName, `ONNX Runtime type '${ortType}' has no KServe v2 datatype.`);
  }
  return datatype;
}

export function toConfigDatatype(datatype: Datatype): ConfigDatatype {
  return DATATYPE_INFO[datatype].configName;
}

/** Maps `TYPE_FP32` → FP32; undefined for names Triton does not define, so config readers can report them. */
export function fromConfigDatatype(name: string): Datatype | undefined {
  return BY_CONFIG_NAME.get(name);
}
