/**
 * The binary tensor data extension (Triton's extension_binary_data.md): raw little-endian, row-major elements
 * after a JSON header. Typed arrays are used in host byte order; every platform onnxruntime-node
 * ships binaries for (x64 and arm64 on Linux, macOS, Windows) is little-endian, so host order is
 * wire order and numeric tensors cross as views of the same memory.
 */
import { createError } from '../errors/index.js';
import { checkJsonDepth } from '../validation/json-depth.js';
import { DATATYPE_INFO } from './datatype-info.js';
import {
  decodeJsonTensorData,
  decodeTensorHeader,
  stringifyJson,
  type JsonParameters,
  type JsonTensorHeader,
} from './json-codec.js';
import { createTensor, elementCount, formatShape } from './tensor-factory.js';
import type { Datatype, Tensor } from '../spec/tensor.js';

/** HTTP header giving the byte length of the JSON part of a request or response body. */
export const INFERENCE_HEADER_CONTENT_LENGTH = 'Inference-Header-Content-Length';

const BYTES_LENGTH_PREFIX = 4;

/** The wire bytes of a tensor: a view of its memory for numeric types; BYTES as 4-byte length + bytes each. */
export function tensorToBytes(tensor: Tensor): Uint8Array {
  if (tensor.datatype !== 'BYTES') {
    const data = tensor.data as Exclude<Tensor['data'], Uint8Array[]>;
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  }
  const elements = tensor.data as Uint8Array[];
  const out = new Uint8Array(elements.reduce((sum, e) => sum + BYTES_LENGTH_PREFIX + e.length, 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const element of elements) {
    view.setUint32(offset, element.length, true);
    out.set(element, offset + BYTES_LENGTH_PREFIX);
    offset += BYTES_LENGTH_PREFIX + element.length;
  }
  return out;
}

/** Reads a tensor from its wire bytes; numeric data is a view of `bytes` unless it must be copied to align. */
export function tensorFromBytes(name: string, datatype: Datatype, shape: readonly number[], bytes: Uint8Array): Tensor {
  if (datatype === 'BYTES') return createTensor(name, datatype, shape, splitBytesElements(name, shape, bytes));
  const info = DATATYPE_INFO[datatype];
  const byteSize = info.byteSize as number;
  const arrayType = info.arrayType as NonNullable<typeof info.arrayType>;
  const count = elementCount(shape);
  if (bytes.byteLength !== count * byteSize) {
    throw createError('SF_ERR_TENSOR_DATA', name, `binary data is ${bytes.byteLength} bytes, but shape ${formatShape(shape)} of ${datatype} needs ${count * byteSize}.`);
  }
  // A typed array must start at a multiple of its element size; a slice of a request body often does
  // not. `new Uint8Array(bytes)` copies to offset 0 even for a Buffer, whose slice() would not copy.
  const aligned = bytes.byteOffset % byteSize === 0 ? bytes : new Uint8Array(bytes);
  return createTensor(name, datatype, shape, new arrayType(aligned.buffer as ArrayBuffer, aligned.byteOffset, count));
}

function splitBytesElements(name: string, shape: readonly number[], bytes: Uint8Array): Uint8Array[] {
  const count = elementCount(shape);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const elements: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.byteLength) {
    if (elements.length === count) {
      throw createError('SF_ERR_TENSOR_DATA', name, `binary data has ${bytes.byteLength - offset} bytes left after the ${count} elements of shape ${formatShape(shape)}.`);
    }
    if (offset + BYTES_LENGTH_PREFIX > bytes.byteLength) {
      throw createError('SF_ERR_TENSOR_DATA', name, `BYTES element ${elements.length} is cut off inside its 4-byte length prefix.`);
    }
    const length = view.getUint32(offset, true);
    const start = offset + BYTES_LENGTH_PREFIX;
    if (start + length > bytes.byteLength) {
      throw createError('SF_ERR_TENSOR_DATA', name, `BYTES element ${elements.length} declares ${length} bytes, but only ${bytes.byteLength - start} remain.`);
    }
    // A plain Uint8Array view, even when `bytes` is a Buffer, so elements behave the same whatever the source.
    elements.push(new Uint8Array(bytes.buffer, bytes.byteOffset + start, length));
    offset = start + length;
  }
  return elements;
}

export interface InferBodyParts {
  /** The parsed JSON header; undefined for a raw binary request (header length 0). */
  readonly header: unknown;
  /** Everything after the JSON header, as a view of the body. */
  readonly binary: Uint8Array;
}

/** Splits a request body at its `Inference-Header-Content-Length` and parses the JSON part. */
export function splitInferBody(body: Uint8Array, headerLength: string | number): InferBodyParts {
  const length = typeof headerLength === 'string' && /^\d+$/.test(headerLength) ? Number(headerLength) : headerLength;
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
    throw createError('SF_ERR_BAD_REQUEST', `${INFERENCE_HEADER_CONTENT_LENGTH} must be a non-negative integer, got '${headerLength}'.`);
  }
  if (length > body.byteLength) {
    throw createError('SF_ERR_BAD_REQUEST', `${INFERENCE_HEADER_CONTENT_LENGTH} is ${length}, larger than the request body (${body.byteLength} bytes).`);
  }
  if (length === 0) return { header: undefined, binary: body };
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(body.buffer, body.byteOffset, length).toString('utf8'));
  } catch (err) {
    throw createError('SF_ERR_BODY_INVALID_JSON', (err as Error).message);
  }
  checkJsonDepth(header);
  return { header, binary: body.subarray(length) };
}

/**
 * Decodes the `inputs` of a request header. Inputs with a `binary_data_size` parameter take their
 * bytes, in order, from `binary`; the others carry JSON `data`. All of `binary` must be used.
 */
export function decodeInferInputs(inputs: unknown, binary: Uint8Array): Tensor[] {
  if (!Array.isArray(inputs)) {
    throw createError('SF_ERR_BAD_REQUEST', `"inputs" must be an array of tensors, got ${JSON.stringify(inputs) ?? 'none'}.`);
  }
  let offset = 0;
  const tensors = inputs.map((input: unknown) => {
    const header = decodeTensorHeader(input);
    const { data } = input as { data?: unknown };
    const size = header.parameters?.binary_data_size;
    if (size === undefined) return decodeJsonTensorData(header, data);
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
      throw createError('SF_ERR_TENSOR_DATA', header.name, `binary_data_size must be a non-negative integer, got ${JSON.stringify(size)}.`);
    }
    if (data !== undefined) {
      throw createError('SF_ERR_TENSOR_DATA', header.name, 'has both "data" and binary_data_size; send the elements one way only.');
    }
    if (offset + size > binary.byteLength) {
      throw createError('SF_ERR_TENSOR_DATA', header.name, `binary_data_size is ${size}, but only ${binary.byteLength - offset} bytes of binary data remain.`);
    }
    const tensor = tensorFromBytes(header.name, header.datatype, header.shape, binary.subarray(offset, offset + size));
    offset += size;
    return tensor;
  });
  if (offset !== binary.byteLength) {
    throw createError('SF_ERR_BAD_REQUEST', `The body has ${binary.byteLength} bytes of binary data after the JSON header, but the inputs' binary_data_size parameters add up to ${offset}.`);
  }
  return tensors;
}

export interface BinaryOutput {
  /** The `$response_output` to put in the JSON header: no data, `binary_data_size` set. */
  readonly header: JsonTensorHeader;
  readonly bytes: Uint8Array;
}

export function encodeBinaryOutput(tensor: Tensor, parameters?: JsonParameters): BinaryOutput {
  const bytes = tensorToBytes(tensor);
  return {
    header: {
      name: tensor.name,
      datatype: tensor.datatype,
      shape: [...tensor.shape],
      parameters: { ...parameters, binary_data_size: bytes.byteLength },
    },
    bytes,
  };
}

export interface InferResponseBody {
  readonly body: Buffer;
  /** The value for the `Inference-Header-Content-Length` response header. */
  readonly headerLength: number;
}

/** JSON header followed by the binary outputs, in the order their headers appear in the JSON. */
export function buildInferResponseBody(header: unknown, binaryChunks: readonly Uint8Array[]): InferResponseBody {
  const json = Buffer.from(stringifyJson(header), 'utf8');
  return { body: Buffer.concat([json, ...binaryChunks]), headerLength: json.byteLength };
}
