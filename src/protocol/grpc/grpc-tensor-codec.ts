import { createError } from '../../errors/index.js';
import { createTensor, parseDatatype, tensorFromBytes, tensorToBytes, validateShape, type TensorValue } from '../../tensor/index.js';
import type { Datatype, Tensor } from '../../spec/tensor.js';
import type { Parameters } from '../infer-request-decoder.js';
import { sharedMemoryInputReader, takeSharedMemoryParameters, writeSharedMemoryOutput, type SharedMemoryLocation } from '../system-shared-memory/tensors.js';
import type { SystemSharedMemoryRegistry } from '../system-shared-memory/registry.js';

/**
 * Tensors and parameters in the gRPC messages of grpc_service.proto, as @grpc/proto-loader
 * hands them over with `longs: String` (int64/uint64 as decimal strings, so none lose precision)
 * and `oneofs: true`.
 */

export interface GrpcInferParameter {
  readonly parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  readonly bool_param?: boolean;
  readonly int64_param?: string | number;
  readonly string_param?: string;
  readonly double_param?: number;
  readonly uint64_param?: string | number;
}

export interface GrpcTensorContents {
  readonly bool_contents?: readonly boolean[];
  readonly int_contents?: readonly number[];
  readonly int64_contents?: readonly (string | number)[];
  readonly uint_contents?: readonly number[];
  readonly uint64_contents?: readonly (string | number)[];
  readonly fp32_contents?: readonly number[];
  readonly fp64_contents?: readonly number[];
  readonly bytes_contents?: readonly Uint8Array[];
}

export interface GrpcInputTensor {
  readonly name?: string;
  readonly datatype?: string;
  readonly shape?: readonly (string | number)[];
  readonly parameters?: Readonly<Record<string, GrpcInferParameter>>;
  readonly contents?: GrpcTensorContents;
}

export interface GrpcOutputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly parameters?: Record<string, GrpcInferParameter>;
}

/** Which InferTensorContents field holds each datatype; FP16 and BF16 have none and go raw only. */
const CONTENTS_FIELD: Readonly<Record<Datatype, keyof GrpcTensorContents | undefined>> = {
  BOOL: 'bool_contents',
  INT8: 'int_contents',
  INT16: 'int_contents',
  INT32: 'int_contents',
  INT64: 'int64_contents',
  UINT8: 'uint_contents',
  UINT16: 'uint_contents',
  UINT32: 'uint_contents',
  UINT64: 'uint64_contents',
  FP32: 'fp32_contents',
  FP64: 'fp64_contents',
  BYTES: 'bytes_contents',
  FP16: undefined,
  BF16: undefined,
};

export function fromGrpcParameters(map: Readonly<Record<string, GrpcInferParameter>> | undefined): Parameters {
  const out: Parameters = {};
  for (const [key, p] of Object.entries(map ?? {})) {
    const choice = p.parameter_choice;
    if (choice === undefined) throw createError('SF_ERR_BAD_REQUEST', `Parameter '${key}' has no value.`);
    const value = p[choice] as string | number | boolean;
    out[key] = choice === 'int64_param' || choice === 'uint64_param' ? toNumber(key, value) : value;
  }
  return out;
}

function toNumber(key: string, value: string | number | boolean): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw createError('SF_ERR_BAD_REQUEST', `Parameter '${key}' is ${String(value)}, beyond the integers serve-fn's parameters hold exactly (±(2^53-1)).`);
  return n;
}

export function toGrpcParameters(parameters: Readonly<Record<string, unknown>> | undefined): Record<string, GrpcInferParameter> {
  const out: Record<string, GrpcInferParameter> = {};
  for (const [key, value] of Object.entries(parameters ?? {})) {
    if (typeof value === 'boolean') out[key] = { bool_param: value };
    else if (typeof value === 'number') out[key] = Number.isInteger(value) ? { int64_param: value } : { double_param: value };
    else if (typeof value === 'bigint') out[key] = { int64_param: value.toString() };
    else out[key] = { string_param: String(value) };
  }
  return out;
}

/** The datatype each typed contents field holds, as Triton names it when the field does not fit the input's datatype. */
const FIELD_DATATYPE: Readonly<Record<keyof GrpcTensorContents, Datatype>> = {
  bool_contents: 'BOOL',
  int_contents: 'INT32',
  int64_contents: 'INT64',
  uint_contents: 'UINT32',
  uint64_contents: 'UINT64',
  fp32_contents: 'FP32',
  fp64_contents: 'FP64',
  bytes_contents: 'BYTES',
};

/**
 * The request's input tensors, read as Triton's InferGRPCToInput does (its order of checks and
 * wording, which Triton's clients test): an input takes its typed `contents` when it has some,
 * else the next `raw_input_contents` entry; typed contents and raw entries never mix in one
 * request. An entry left over after the last input is refused rather than ignored. An input with
 * shared-memory parameters is read from its region and takes no raw entry (Triton's extension_shared_memory.md).
 * Everything is checked now; what it returns starts the reads from regions.
 */
export function decodeGrpcInputs(inputs: readonly GrpcInputTensor[], raw: readonly Uint8Array[], modelName: string, sharedMemory: SystemSharedMemoryRegistry): () => Promise<Tensor[]> {
  let nextRaw = 0;
  const tensors = inputs.map((input): Tensor | (() => Promise<Tensor>) => {
    const name = input.name ?? '';
    if (name === '') throw createError('SF_ERR_BAD_REQUEST', 'Each input needs a non-empty name.');
    const datatype = parseDatatype(input.datatype, name);
    const shape = validateShape(name, (input.shape ?? []).map(Number));
    const { location } = takeSharedMemoryParameters(`input '${name}'`, fromGrpcParameters(input.parameters));
    const field = typedField(input.contents, name, datatype, modelName);
    if (location !== undefined) {
      if (field !== undefined) throw createError('SF_ERR_BAD_REQUEST', `unexpected explicit tensor data for input tensor '${name}' for model '${modelName}', it is in shared memory region '${location.region}'`);
      return sharedMemoryInputReader(sharedMemory, name, datatype, shape, location);
    }
    if (field !== undefined && raw.length > 0) {
      throw createError('SF_ERR_BAD_REQUEST', `contents field must not be specified when using raw_input_contents for '${name}' for model '${modelName}'`);
    }
    if (field !== undefined) {
      const values = input.contents![field] as readonly TensorValue[];
      return createTensor(name, datatype, shape, datatype === 'BYTES' ? values.map((b) => new Uint8Array(b as Uint8Array)) : values);
    }
    if (nextRaw < raw.length) return tensorFromBytes(name, datatype, shape, raw[nextRaw++]);
    throw createError('SF_ERR_BAD_REQUEST', `unable to find data for input tensor '${name}' for model '${modelName}' in request.`);
  });
  if (nextRaw < raw.length) {
    throw createError('SF_ERR_BAD_REQUEST', `Expected ${inputs.length} raw_input_contents, one per input, got ${raw.length} for model '${modelName}'.`);
  }
  return () => Promise.all(tensors.map((tensor) => (typeof tensor === 'function' ? tensor() : tensor)));
}

/** The non-empty typed contents field of an input, checked in Triton's field order; undefined when none is set. */
function typedField(contents: GrpcTensorContents | undefined, name: string, datatype: Datatype, modelName: string): keyof GrpcTensorContents | undefined {
  const set = (Object.keys(FIELD_DATATYPE) as (keyof GrpcTensorContents)[]).filter((f) => (contents?.[f]?.length ?? 0) > 0);
  const [field, second] = set;
  if (field !== undefined && CONTENTS_FIELD[datatype] !== field) {
    throw createError(
      'SF_ERR_BAD_REQUEST',
      `unexpected explicit tensor data for input tensor '${name}' for model '${modelName}' of type '${FIELD_DATATYPE[field]}', expected datatype '${datatype}'`,
    );
  }
  if (second !== undefined) {
    throw createError('SF_ERR_BAD_REQUEST', `unexpected explicit tensor data for input tensor '${name}' for model '${modelName}', binary data was already supplied.`);
  }
  return field;
}

/**
 * Outputs as Triton sends them over gRPC: metadata in `outputs`, elements in `raw_output_contents`.
 * An output with a shared-memory location (`shared.locations[i]`) is written into its region instead;
 * its raw entry is empty, as in Triton, so the entries still line up with the outputs.
 */
export async function encodeGrpcOutputs(
  tensors: readonly Tensor[],
  shared?: { readonly registry: SystemSharedMemoryRegistry; readonly locations: readonly (SharedMemoryLocation | undefined)[] },
): Promise<{ outputs: GrpcOutputTensor[]; raw_output_contents: Uint8Array[] }> {
  const outputs: GrpcOutputTensor[] = [];
  const raw: Uint8Array[] = [];
  for (const [i, tensor] of tensors.entries()) {
    const location = shared?.locations[i];
    if (shared === undefined || location === undefined) {
      outputs.push({ name: tensor.name, datatype: tensor.datatype, shape: [...tensor.shape] });
      raw.push(tensorToBytes(tensor));
      continue;
    }
    const header = await writeSharedMemoryOutput(shared.registry, tensor, location);
    outputs.push({ name: header.name, datatype: header.datatype, shape: header.shape, parameters: toGrpcParameters(header.parameters) });
    raw.push(new Uint8Array(0));
  }
  return { outputs, raw_output_contents: raw };
}
