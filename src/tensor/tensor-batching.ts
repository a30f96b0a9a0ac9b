import { createError } from '../errors/index.js';
import { DATATYPE_INFO } from './datatype-info.js';
import { createTensor, elementCount, formatShape } from './tensor-factory.js';
import type { Tensor, TensorData } from '../spec/tensor.js';

/**
 * Batching of tensor requests the way Triton does it: requests are joined along dimension 0,
 * only when every input has the same shape beyond that dimension, and the model's outputs are cut
 * back into one piece per request.
 */

type NumericData = Exclude<TensorData, Uint8Array[]>;
type Settable = { set(source: NumericData, offset: number): void };

/** Joins tensors of one datatype and equal trailing dimensions along dimension 0. */
export function concatBatch(name: string, parts: readonly Tensor[]): Tensor {
  const first = parts[0];
  if (parts.length === 1) return first.name === name ? first : { ...first, name };
  const shape = [parts.reduce((rows, part) => rows + part.shape[0], 0), ...first.shape.slice(1)];
  if (first.datatype === 'BYTES') return createTensor(name, 'BYTES', shape, parts.flatMap((part) => part.data as Uint8Array[]));
  const ArrayType = DATATYPE_INFO[first.datatype].arrayType!;
  const joined = new ArrayType(elementCount(shape));
  let offset = 0;
  for (const part of parts) {
    (joined as unknown as Settable).set(part.data as NumericData, offset);
    offset += part.data.length;
  }
  return createTensor(name, first.datatype, shape, joined);
}

/**
 * Cuts a tensor into consecutive pieces of `rows` rows along dimension 0. Each piece owns its
 * buffer (slice, not subarray), so it can be transferred to another thread on its own.
 */
export function splitBatch(tensor: Tensor, rows: readonly number[]): Tensor[] {
  checkRows(tensor, rows.reduce((sum, n) => sum + n, 0));
  if (rows.length === 1) return [tensor];
  const rowSize = elementCount(tensor.shape.slice(1));
  let row = 0;
  return rows.map((count) => {
    const start = row * rowSize;
    row += count;
    const data = (tensor.data as NumericData | Uint8Array[]).slice(start, row * rowSize) as TensorData;
    return createTensor(tensor.name, tensor.datatype, [count, ...tensor.shape.slice(1)], data);
  });
}

/**
 * The first `rows` rows of a tensor of `total` rows, as splitBatch(tensor, [rows, total - rows])[0]
 * would cut them, without copying the rows after them (padding, say) into a piece thrown away.
 */
export function firstRows(tensor: Tensor, rows: number, total: number): Tensor {
  checkRows(tensor, total);
  const shape = [rows, ...tensor.shape.slice(1)];
  return createTensor(tensor.name, tensor.datatype, shape, (tensor.data as NumericData | Uint8Array[]).slice(0, elementCount(shape)) as TensorData);
}

function checkRows(tensor: Tensor, total: number): void {
  if (tensor.shape.length === 0 || tensor.shape[0] !== total) {
    throw createError('SF_ERR_BACKEND_RUN_FAILED', 'batching', tensor.name, `output shape ${formatShape(tensor.shape)} does not start with the batch size ${total} of its requests`);
  }
}

/** Gives a tensor a new shape with the same elements; one -1 in `shape` takes whatever is left. */
export function reshapeTensor(tensor: Tensor, shape: readonly number[]): Tensor {
  const known = shape.filter((d) => d !== -1);
  const free = shape.length - known.length;
  const size = tensor.data.length;
  const rest = free === 1 && elementCount(known) > 0 ? size / elementCount(known) : undefined;
  const resolved = shape.map((d) => (d === -1 ? (rest ?? -1) : d));
  if (free > 1 || !Number.isInteger(rest ?? 0) || elementCount(resolved) !== size) {
    throw createError('SF_ERR_TENSOR_SHAPE', tensor.name, formatShape(shape), formatShape(tensor.shape));
  }
  return { ...tensor, shape: resolved };
}

/** Requests with equal signatures may share an execution: the same inputs, equal beyond dimension 0. */
export function batchSignature(inputs: readonly Tensor[]): string {
  return inputs
    .map((t) => `${t.name}:${t.shape.slice(1).join('x')}`)
    .sort()
    .join(';');
}
