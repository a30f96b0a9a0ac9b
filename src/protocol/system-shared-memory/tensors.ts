import { createError } from '../../errors/index.js';
import { DATATYPE_INFO, elementCount, formatShape, tensorFromBytes, tensorToBytes, type JsonTensorHeader } from '../../tensor/index.js';
import type { Datatype, Tensor } from '../../spec/tensor.js';
import type { SystemSharedMemoryRegistry } from './registry.js';

/** Where a tensor's bytes are: the shared-memory parameters of an input or a requested output. */
export interface SharedMemoryLocation {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

const REGION = 'shared_memory_region';
const OFFSET = 'shared_memory_offset';
const BYTE_SIZE = 'shared_memory_byte_size';

/**
 * Takes the shared-memory parameters (Triton's extension_shared_memory.md) out of a tensor's
 * parameters: `location` when `shared_memory_region` is set, and the other parameters in `rest`.
 * The region and the byte size go together; the offset defaults to 0. HTTP and gRPC both read them here.
 */
export function takeSharedMemoryParameters<V>(owner: string, parameters: Readonly<Record<string, V>> | undefined): { location?: SharedMemoryLocation; rest: Record<string, V> } {
  const { [REGION]: region, [OFFSET]: offset, [BYTE_SIZE]: byteSize, ...rest } = parameters ?? {};
  if (region === undefined) {
    if (offset !== undefined || byteSize !== undefined) {
      throw createError('SF_ERR_BAD_REQUEST', `${owner} sets '${byteSize === undefined ? OFFSET : BYTE_SIZE}' without '${REGION}'`);
    }
    return { rest };
  }
  if (typeof region !== 'string' || region === '') throw createError('SF_ERR_BAD_REQUEST', `Unable to parse '${REGION}' of ${owner}: expected a region name`);
  if (byteSize === undefined) throw createError('SF_ERR_BAD_REQUEST', `${owner} sets '${REGION}' without '${BYTE_SIZE}'`);
  return { location: { region, offset: readCount(owner, OFFSET, offset ?? 0), byteSize: readCount(owner, BYTE_SIZE, byteSize) }, rest };
}

function readCount(owner: string, name: string, value: unknown): number {
  // gRPC's int64/uint64 parameters arrive as decimal strings (Long-free protobuf decoding).
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number === 'number' && Number.isSafeInteger(number) && number >= 0) return number;
  throw createError('SF_ERR_BAD_REQUEST', `Unable to parse '${name}' of ${owner}: expected a non-negative integer, got ${JSON.stringify(value)}`);
}

/**
 * Checks an input in a region now (its range, and its byte size against its shape) and returns what
 * reads it: a decoder checks every input and output before it starts a read, so a bad request never
 * leaves a read in flight. The bytes are copied out (registry.read): the model owns the copy even if
 * the client rewrites or unregisters the region while the request waits in a queue, and the runtime
 * may transfer it to an instance's thread.
 */
export function sharedMemoryInputReader(registry: SystemSharedMemoryRegistry, name: string, datatype: Datatype, shape: readonly number[], location: SharedMemoryLocation): () => Promise<Tensor> {
  registry.check(location.region, location.offset, location.byteSize);
  const elementSize = DATATYPE_INFO[datatype].byteSize;
  if (elementSize !== undefined && elementCount(shape) * elementSize !== location.byteSize) {
    throw createError('SF_ERR_TENSOR_DATA', name, `${BYTE_SIZE} is ${location.byteSize}, but shape ${formatShape(shape)} of ${datatype} needs ${elementCount(shape) * elementSize} bytes.`);
  }
  return async () => tensorFromBytes(name, datatype, shape, await registry.read(location.region, location.offset, location.byteSize));
}

/** Writes an output tensor into its region; the answer carries its header and the parameters, no data (Triton's extension_shared_memory.md). */
export async function writeSharedMemoryOutput(registry: SystemSharedMemoryRegistry, tensor: Tensor, location: SharedMemoryLocation): Promise<JsonTensorHeader> {
  const bytes = tensorToBytes(tensor);
  if (bytes.byteLength > location.byteSize) {
    throw createError('SF_ERR_TENSOR_DATA', tensor.name, `shared memory size specified with the request for output '${tensor.name}' (${location.byteSize} bytes) should be at least ${bytes.byteLength} bytes to hold the results`);
  }
  registry.check(location.region, location.offset, location.byteSize);
  await registry.write(location.region, location.offset, bytes);
  return {
    name: tensor.name,
    datatype: tensor.datatype,
    shape: [...tensor.shape],
    parameters: { [REGION]: location.region, [BYTE_SIZE]: bytes.byteLength, ...(location.offset === 0 ? {} : { [OFFSET]: location.offset }) },
  };
}
