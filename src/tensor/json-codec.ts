import { createError } from '../errors/index.js';
import { loneSurrogateAt } from '../validation/lone-surrogate.js';
import { isBigIntDatatype, parseDatatype } from './datatype-info.js';
import { bf16BitsToNumber, fp16BitsToNumber } from './half-float.js';
import { createTensor, elementCount, validateShape } from './tensor-factory.js';
import type { Datatype, Tensor } from '../spec/tensor.js';

/** `$parameters` of KServe v2 required_api.md. */
export type JsonParameters = Readonly<Record<string, string | number | boolean>>;

/** One element in JSON. INT64/UINT64 elements are bigints: write them with {@link stringifyJson}. */
export type JsonTensorValue = number | boolean | string | bigint;

export interface JsonTensorHeader {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly parameters?: JsonParameters;
}

/** `$response_output` of KServe v2 required_api.md, data always flat. */
export interface JsonTensor extends JsonTensorHeader {
  readonly data: readonly JsonTensorValue[];
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads name, datatype, shape and parameters of a `$request_input`, leaving its data alone. */
export function decodeTensorHeader(input: unknown): JsonTensorHeader {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw createError('SF_ERR_BAD_REQUEST', `Each input must be an object with name, shape, datatype and data; got ${JSON.stringify(input)}.`);
  }
  const { name, datatype, shape, parameters } = input as Record<string, unknown>;
  if (typeof name !== 'string' || name === '') {
    throw createError('SF_ERR_BAD_REQUEST', `Each input needs a non-empty "name" string; got ${JSON.stringify(name) ?? 'none'}.`);
  }
  return {
    name,
    datatype: parseDatatype(datatype, name),
    shape: validateShape(name, shape),
    ...(parameters === undefined ? {} : { parameters: decodeParameters(name, parameters) }),
  };
}

function decodeParameters(name: string, parameters: unknown): JsonParameters {
  const valid =
    typeof parameters === 'object' && parameters !== null && !Array.isArray(parameters) &&
    Object.values(parameters).every((v) => ['string', 'number', 'boolean'].includes(typeof v));
  if (!valid) {
    throw createError('SF_ERR_TENSOR_DATA', name, `parameters must be an object of string, number or boolean values, got ${JSON.stringify(parameters)}.`);
  }
  return parameters as JsonParameters;
}

/** Decodes the JSON `data` of an input whose header is already read; nested or flat data (row-major). */
export function decodeJsonTensorData(header: JsonTensorHeader, data: unknown): Tensor {
  if (!Array.isArray(data)) {
    const got = data === undefined ? 'no "data" and no binary_data_size parameter' : `"data" ${JSON.stringify(data)}`;
    throw createError('SF_ERR_TENSOR_DATA', header.name, `expected "data" as an array of elements, got ${got}.`);
  }
  const flat = data.some(Array.isArray) ? data.flat(Infinity) : data;
  // UTF-8 cannot hold a lone surrogate, which JSON.parse lets through from `"\ud800"`: encoding would
  // write U+FFFD in its place. Triton's RapidJSON refuses the escape as well.
  if (header.datatype === 'BYTES') {
    const at = flat.findIndex((value) => typeof value === 'string' && loneSurrogateAt(value) >= 0);
    if (at >= 0) throw createError('SF_ERR_TENSOR_DATA', header.name, `element ${at} is not valid Unicode: it holds a lone surrogate.`);
  }
  return createTensor(header.name, header.datatype, header.shape, flat);
}

export function decodeJsonTensor(input: unknown): Tensor {
  return decodeJsonTensorData(decodeTensorHeader(input), (input as { data?: unknown }).data);
}

/** The elements of a tensor as JSON values: booleans, numbers, bigints (INT64/UINT64) or UTF-8 strings. */
export function tensorToJsonValues(tensor: Tensor): JsonTensorValue[] {
  const { datatype, data } = tensor;
  if (datatype === 'BYTES') {
    return (data as Uint8Array[]).map((bytes, i) => {
      try {
        return strictUtf8.decode(bytes);
      } catch {
        throw createError('SF_ERR_TENSOR_DATA', tensor.name, `element ${i} is not valid UTF-8, so it cannot be sent as JSON; request this output with "binary_data": true.`);
      }
    });
  }
  if (datatype === 'BOOL') return Array.from(data as Uint8Array, (v) => v !== 0);
  if (datatype === 'FP16') return Array.from(data as Uint16Array, fp16BitsToNumber);
  if (datatype === 'BF16') return Array.from(data as Uint16Array, bf16BitsToNumber);
  if (isBigIntDatatype(datatype)) return Array.from(data as BigInt64Array);
  return Array.from(data as ArrayLike<number>);
}

export function encodeJsonTensor(tensor: Tensor, parameters?: JsonParameters): JsonTensor {
  return {
    name: tensor.name,
    datatype: tensor.datatype,
    shape: [...tensor.shape],
    ...(parameters === undefined ? {} : { parameters }),
    data: tensorToJsonValues(tensor),
  };
}

/**
 * The most bytes an element can take in JSON with its comma: the longest integer of the type, and for
 * floats the longest shortest-round-trip form of a double (e.g. -2.2250738585072014e-308, 24
 * characters), which is what JSON.stringify writes for every float type once it is a JS number.
 */
const JSON_ELEMENT_WIDTH: Readonly<Record<Exclude<Datatype, 'BYTES'>, number>> = {
  BOOL: 6,
  INT8: 5,
  UINT8: 4,
  INT16: 7,
  UINT16: 6,
  INT32: 12,
  UINT32: 11,
  INT64: 21,
  UINT64: 21,
  FP16: 25,
  BF16: 25,
  FP32: 25,
  FP64: 25,
};

/** Room for a tensor's name, datatype, shape and punctuation, beyond its elements. */
const JSON_TENSOR_OVERHEAD = 128;

/**
 * An upper bound of the bytes {@link encodeJsonTensor} and {@link stringifyJson} write for a tensor,
 * from its element count and type alone, so an answer too large to build can be refused before it
 * is built. A BYTES element counts 6 bytes a byte (a control character becomes \u00XX) and its quotes.
 */
export function jsonTensorByteBound(tensor: Tensor): number {
  const header = JSON_TENSOR_OVERHEAD + 6 * tensor.name.length + JSON_ELEMENT_WIDTH.INT64 * tensor.shape.length;
  if (tensor.datatype !== 'BYTES') return header + elementCount(tensor.shape) * JSON_ELEMENT_WIDTH[tensor.datatype];
  return (tensor.data as Uint8Array[]).reduce((sum, bytes) => sum + 6 * bytes.byteLength + 3, header);
}

/**
 * JSON.stringify that writes bigints as exact integer literals, as Triton writes INT64/UINT64.
 * Hand-written because JSON.stringify throws on bigints and Node 20 lacks JSON.rawJSON; converting
 * to numbers would silently round values past 2^53. Arrays without bigints or objects go to
 * JSON.stringify whole, so large float outputs keep the native speed.
 */
export function stringifyJson(value: unknown): string {
  return writeJson(value) ?? 'null';
}

function writeJson(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return writeJson((value as { toJSON(): unknown }).toJSON());
  if (Array.isArray(value)) {
    if (!value.some((v) => typeof v === 'bigint' || (typeof v === 'object' && v !== null))) return JSON.stringify(value);
    return `[${value.map((v) => writeJson(v) ?? 'null').join(',')}]`;
  }
  const members: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const written = writeJson(v);
    if (written !== undefined) members.push(`${JSON.stringify(key)}:${written}`);
  }
  return `{${members.join(',')}}`;
}
