import { createError } from '../errors/index.js';
import type { InferResponse } from '../inference/inference-model.js';
import { buildInferResponseBody, encodeBinaryOutput, encodeJsonTensor, type JsonTensor, type JsonTensorHeader } from '../tensor/index.js';
import type { Tensor } from '../tensor/tensor.js';
import type { DecodedInferRequest } from './infer-request-decoder.js';
import { writeSharedMemoryOutput } from './system-shared-memory/tensors.js';
import type { SystemSharedMemoryRegistry } from './system-shared-memory/registry.js';

export interface EncodedInferResponse {
  readonly body: Buffer;
  /** `Inference-Header-Content-Length` when binary outputs follow the JSON; undefined for a JSON-only body. */
  readonly headerLength?: number;
}

/**
 * Writes `$inference_response` (KServe v2 required_api.md): requested outputs in request order (all the
 * model returned otherwise), each as JSON data, as binary data after the JSON header (Triton's extension_binary_data.md),
 * or written into its shared-memory region (Triton's extension_shared_memory.md).
 */
export function encodeInferResponse(
  response: InferResponse,
  decoded: Pick<DecodedInferRequest, 'request' | 'outputs' | 'binaryByDefault'>,
  sharedMemory: SystemSharedMemoryRegistry,
): EncodedInferResponse {
  const tensors = selectOutputs(response, decoded.outputs?.map((o) => o.name));
  const binary = (i: number): boolean => decoded.outputs?.[i].binary ?? decoded.binaryByDefault;
  const chunks: Uint8Array[] = [];
  const outputs: (JsonTensor | JsonTensorHeader)[] = tensors.map((tensor, i) => {
    const location = decoded.outputs?.[i].sharedMemory;
    if (location) return writeSharedMemoryOutput(sharedMemory, tensor, location);
    if (!binary(i)) return encodeJsonTensor(tensor);
    const encoded = encodeBinaryOutput(tensor);
    chunks.push(encoded.bytes);
    return encoded.header;
  });
  const id = response.id ?? decoded.request.id;
  const header = {
    model_name: response.modelName,
    model_version: response.modelVersion,
    ...(id ? { id } : {}),
    ...(response.parameters && Object.keys(response.parameters).length > 0 ? { parameters: response.parameters } : {}),
    outputs,
  };
  const { body, headerLength } = buildInferResponseBody(header, chunks);
  return chunks.length === 0 ? { body } : { body, headerLength };
}

/** The outputs to send: the requested ones in request order, or all the model returned. */
export function selectOutputs(response: InferResponse, requested: readonly string[] | undefined): readonly Tensor[] {
  if (requested === undefined) return response.outputs;
  const byName = new Map(response.outputs.map((t) => [t.name, t]));
  return requested.map((name) => byName.get(name) ?? missingOutput(response, name));
}

function missingOutput(response: InferResponse, name: string): never {
  throw createError('SF_ERR_EXECUTION_FAILED', response.modelName, 'infer', `the requested output '${name}' is not among the outputs it returned (${response.outputs.map((t) => t.name).join(', ') || 'none'}).`);
}
