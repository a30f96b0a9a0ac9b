import { createError } from '../errors/index.js';
import { checkOutputName } from '../inference/request-validation.js';
import type { InferenceModelInfo, InferRequest, RequestedOutput } from '../inference/inference-model.js';
import { DATATYPE_INFO, decodeInferInputs, decodeTensorHeader, elementCount, formatShape, splitInferBody, tensorFromBytes } from '../tensor/index.js';
import type { Tensor } from '../spec/tensor.js';
import { sharedMemoryInputReader, takeSharedMemoryParameters, type SharedMemoryLocation } from './system-shared-memory/tensors.js';
import type { SystemSharedMemoryRegistry } from './system-shared-memory/registry.js';

/** How one output goes back: in the JSON `data`, as bytes after the JSON (binary tensor data extension), or into a shared-memory region. */
export interface OutputFormat {
  readonly name: string;
  readonly binary: boolean;
  readonly sharedMemory?: SharedMemoryLocation;
}

export interface DecodedInferRequest {
  /** What the model receives; the route adds the abort signal. */
  readonly request: InferRequest;
  /** The requested outputs in request order; undefined = every output the model returns. */
  readonly outputs?: readonly OutputFormat[];
  /** Format of outputs not listed (all of them when `outputs` is undefined): `binary_data_output`, or true for raw requests. */
  readonly binaryByDefault: boolean;
}

export type Parameters = Record<string, string | number | boolean>;

/**
 * Reads an infer request body (KServe v2 required_api.md; Triton's extension_binary_data.md; Triton's extension_sequence.md and extension_parameters.md). `headerLength` is the
 * `Inference-Header-Content-Length` header: absent = the whole body is JSON, 0 = a raw binary
 * request for a single-input model, n = n bytes of JSON followed by binary tensor data.
 */
export async function decodeInferRequest(body: Uint8Array, headerLength: string | undefined, info: InferenceModelInfo, sharedMemory: SystemSharedMemoryRegistry): Promise<DecodedInferRequest> {
  if (headerLength === undefined) {
    if (body.byteLength === 0) throw createError('SF_ERR_BODY_INVALID_JSON', 'the body is empty');
    return decodeJsonRequest(splitInferBody(body, body.byteLength).header, new Uint8Array(0), info, sharedMemory);
  }
  const { header, binary } = splitInferBody(body, headerLength.trim());
  return header === undefined ? decodeRawRequest(binary, info) : decodeJsonRequest(header, binary, info, sharedMemory);
}

async function decodeJsonRequest(header: unknown, binary: Uint8Array, info: InferenceModelInfo, sharedMemory: SystemSharedMemoryRegistry): Promise<DecodedInferRequest> {
  if (!isObject(header)) {
    throw createError('SF_ERR_BAD_REQUEST', `The inference request must be a JSON object with "inputs", got ${describe(header)}.`);
  }
  const { id, inputs, outputs, parameters } = header;
  if (id !== undefined && typeof id !== 'string') throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'id': expected a string, got ${describe(id)}.`);
  const reserved = splitReservedParameters(readParameters('the request', parameters));
  const readInputs = decodeInputs(inputs, binary, sharedMemory);
  const requested = outputs === undefined ? undefined : readRequestedOutputs(outputs, info, sharedMemory);
  const tensors = await readInputs();
  const request = buildInferRequest(id, tensors, requested?.map((r) => r.output), reserved);
  const binaryByDefault = reserved.binaryDataOutput ?? false;
  return {
    request,
    ...(requested === undefined
      ? {}
      : { outputs: requested.map((r) => ({ name: r.output.name, binary: r.binary ?? binaryByDefault, ...(r.sharedMemory ? { sharedMemory: r.sharedMemory } : {}) })) }),
    binaryByDefault,
  };
}

/** The request-level parameters with the reserved ones the protocol layer consumes taken out and checked (Triton's extension_parameters.md). */
export interface ReservedParameters {
  readonly priority?: number;
  readonly timeoutUs?: number;
  readonly binaryDataOutput?: boolean;
  /** Everything else for the model version; a stateful model's scheduler takes the sequence parameters out (sequence-parameters.ts). */
  readonly passed: Parameters;
}

export function splitReservedParameters(parameters: Parameters): ReservedParameters {
  const { priority, timeout, binary_data_output: binaryDataOutput, ...passed } = parameters;
  checkSequenceParameters(passed);
  if (binaryDataOutput !== undefined && typeof binaryDataOutput !== 'boolean') {
    throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'binary_data_output': expected a boolean, got ${describe(binaryDataOutput)}.`);
  }
  return {
    passed,
    ...(priority === undefined ? {} : { priority: readCount(priority, 'SF_ERR_PRIORITY_INVALID') }),
    ...(timeout === undefined ? {} : { timeoutUs: readCount(timeout, 'SF_ERR_TIMEOUT_INVALID') }),
    ...(binaryDataOutput === undefined ? {} : { binaryDataOutput }),
  };
}

/** An InferRequest with only the fields the client gave. */
export function buildInferRequest(id: string | undefined, inputs: Tensor[], outputs: readonly RequestedOutput[] | undefined, reserved: ReservedParameters): InferRequest {
  return {
    ...(id ? { id } : {}),
    inputs,
    ...(outputs === undefined ? {} : { outputs }),
    ...(Object.keys(reserved.passed).length === 0 ? {} : { parameters: reserved.passed }),
    ...(reserved.priority === undefined ? {} : { priority: reserved.priority }),
    ...(reserved.timeoutUs === undefined ? {} : { timeoutUs: reserved.timeoutUs }),
  };
}

function readParameters(owner: string, parameters: unknown): Parameters {
  if (parameters === undefined) return {};
  const valid = isObject(parameters) && Object.values(parameters).every(isParameterValue);
  if (!valid) {
    throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'parameters' of ${owner}: expected an object of string, number or boolean values, got ${describe(parameters)}.`);
  }
  return { ...(parameters as Parameters) };
}

function readCount(value: unknown, code: 'SF_ERR_PRIORITY_INVALID' | 'SF_ERR_TIMEOUT_INVALID'): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw code === 'SF_ERR_PRIORITY_INVALID'
    ? createError(code, describe(value), 'give a non-negative integer (1 = highest, 0 = the default level)')
    : createError(code, describe(value));
}

/**
 * The sequence extension's parameters (Triton's extension_sequence.md) pass on to the model version, whose
 * scheduler routes the request by them (or refuses them when the model is not stateful); only their
 * types are checked here, for the HTTP and the gRPC decoders alike.
 */
function checkSequenceParameters(parameters: Parameters): void {
  const id = parameters.sequence_id;
  if (id !== undefined && typeof id !== 'string' && !(typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)) {
    throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'sequence_id': expected a non-negative integer or a string, got ${describe(id)}.`);
  }
  for (const flag of ['sequence_start', 'sequence_end']) {
    const value = parameters[flag];
    if (value !== undefined && typeof value !== 'boolean') {
      throw createError('SF_ERR_BAD_REQUEST', `Unable to parse '${flag}': expected a boolean, got ${describe(value)}.`);
    }
  }
}

/**
 * The inputs in request order: those with shared-memory parameters read from their region, the
 * others from `data` or the binary section, whose offsets only the non-shared-memory inputs advance.
 * Everything is checked now; what it returns starts the reads from regions.
 */
function decodeInputs(inputs: unknown, binary: Uint8Array, sharedMemory: SystemSharedMemoryRegistry): () => Promise<Tensor[]> {
  if (!Array.isArray(inputs)) {
    const decoded = decodeInferInputs(inputs, binary);
    return async () => decoded;
  }
  const fromRegions = inputs.map((input: unknown) => sharedMemoryInput(input, sharedMemory));
  const others = decodeInferInputs(inputs.filter((_, i) => fromRegions[i] === undefined), binary);
  return () => Promise.all(fromRegions.map((read) => (read ? read() : (others.shift() as Tensor))));
}

function sharedMemoryInput(input: unknown, sharedMemory: SystemSharedMemoryRegistry): (() => Promise<Tensor>) | undefined {
  const header = decodeTensorHeader(input);
  const { location } = takeSharedMemoryParameters(`input '${header.name}'`, header.parameters);
  if (location === undefined) return undefined;
  const given = [(input as { data?: unknown }).data !== undefined && "'data'", header.parameters?.binary_data_size !== undefined && "'binary_data_size'"].filter(Boolean);
  if (given.length > 0) {
    throw createError('SF_ERR_BAD_REQUEST', `Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set ${given.join(' ')} 'shared_memory_region'`);
  }
  return sharedMemoryInputReader(sharedMemory, header.name, header.datatype, header.shape, location);
}

function readRequestedOutputs(outputs: unknown, info: InferenceModelInfo, sharedMemory: SystemSharedMemoryRegistry): { output: RequestedOutput; binary?: boolean; sharedMemory?: SharedMemoryLocation }[] {
  if (!Array.isArray(outputs)) throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'outputs': expected an array, got ${describe(outputs)}.`);
  return outputs.map((output: unknown) => {
    if (!isObject(output) || typeof output.name !== 'string') {
      throw createError('SF_ERR_BAD_REQUEST', `Each requested output must be an object with a "name" string, got ${describe(output)}.`);
    }
    const { name } = output;
    checkOutputName(name, info);
    const { binary_data: binary, ...parameters } = readParameters(`output '${name}'`, output.parameters);
    if (binary !== undefined && typeof binary !== 'boolean') {
      throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'binary_data' of output '${name}': expected a boolean, got ${describe(binary)}.`);
    }
    const { location, rest } = takeSharedMemoryParameters(`output '${name}'`, parameters);
    if (location !== undefined && binary === true) throw createError('SF_ERR_BAD_REQUEST', "Output can't set both 'shared_memory_region' and 'binary_data'");
    // Checked now, as Triton does, so a wrong region fails the request before the model runs.
    if (location !== undefined) sharedMemory.check(location.region, location.offset, location.byteSize);
    const requested: RequestedOutput = Object.keys(rest).length === 0 ? { name } : { name, parameters: rest };
    return {
      output: requested,
      ...(binary === undefined ? {} : { binary }),
      ...(location === undefined ? {} : { sharedMemory: location }),
    };
  });
}

/**
 * A raw binary request (header length 0): the body is the single input, batch 1, and every output
 * goes back binary. Shape deduction and messages follow Triton core's InferenceRequest::Normalize.
 */
function decodeRawRequest(bytes: Uint8Array, info: InferenceModelInfo): DecodedInferRequest {
  if (info.inputs.length !== 1) {
    throw createError('SF_ERR_BAD_REQUEST', `Raw request must only have 1 input (found 1) to be deduced but got ${info.inputs.length} inputs in '${info.name}' model configuration`);
  }
  const spec = info.inputs[0];
  const shape = [...(info.maxBatchSize > 0 ? [1] : []), ...spec.shape];
  const variable = shape.filter((d) => d === -1).length;
  if (variable > 1) {
    throw createError('SF_ERR_BAD_REQUEST', `The shape of the raw input '${spec.name}' can not be deduced because there are more than one variable-sized dimension`);
  }
  let tensor: Tensor;
  if (spec.datatype === 'BYTES') {
    if (variable > 0 || elementCount(shape) !== 1) {
      throw createError('SF_ERR_BAD_REQUEST', `For BYTE datatype raw input '${spec.name}', the model must have input shape [1]`);
    }
    tensor = { name: spec.name, datatype: 'BYTES', shape, data: [bytes] };
  } else {
    const fixed = elementCount(shape.filter((d) => d !== -1));
    const byteSize = DATATYPE_INFO[spec.datatype].byteSize as number;
    const resolved = variable === 0 ? shape : shape.map((d) => (d === -1 ? Math.floor(bytes.byteLength / byteSize / fixed) : d));
    if (elementCount(resolved) * byteSize !== bytes.byteLength) {
      throw createError('SF_ERR_TENSOR_DATA', spec.name, `raw binary data is ${bytes.byteLength} bytes, which does not fill shape ${formatShape(shape)} of ${spec.datatype} (${byteSize} bytes an element).`);
    }
    tensor = tensorFromBytes(spec.name, spec.datatype, resolved, bytes);
  }
  return { request: { inputs: [tensor] }, binaryByDefault: true };
}

/** A value a request parameter may hold. */
export function isParameterValue(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** A JSON object, as opposed to null, an array or a scalar. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value as it appears in an error message: its JSON, or its string form where it has none (undefined). */
export function describe(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}
