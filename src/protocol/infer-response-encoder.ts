import { createError } from '../errors/index.js';
import type { InferResponse } from '../inference/inference-model.js';
import { buildInferResponseBody, encodeBinaryOutput, encodeJsonTensor, jsonTensorByteBound, type JsonTensor, type JsonTensorHeader } from '../tensor/index.js';
import type { Tensor } from '../spec/tensor.js';
import type { DecodedInferRequest } from './infer-request-decoder.js';
import { writeSharedMemoryOutput, type SharedMemoryLocation } from './system-shared-memory/tensors.js';
import type { SystemSharedMemoryRegistry } from './system-shared-memory/registry.js';

export interface EncodedInferResponse {
  readonly body: Buffer;
  /** `Inference-Header-Content-Length` when binary outputs follow the JSON; undefined for a JSON-only body. */
  readonly headerLength?: number;
}

/**
 * Writes `$inference_response` (KServe v2 required_api.md): requested outputs in request order (all the
 * model returned otherwise), each as JSON data, as binary data after the JSON header (Triton's extension_binary_data.md),
 * or written into its shared-memory region (Triton's extension_shared_memory.md). `jsonLimit` bounds
 * the JSON: an answer that could pass it is refused before anything is written or encoded.
 */
export async function encodeInferResponse(
  response: InferResponse,
  decoded: Pick<DecodedInferRequest, 'request' | 'outputs' | 'binaryByDefault'>,
  sharedMemory: SystemSharedMemoryRegistry,
  jsonLimit: number,
): Promise<EncodedInferResponse> {
  const tensors = selectOutputs(response, decoded.outputs?.map((o) => o.name));
  const format = (i: number): 'json' | 'binary' | SharedMemoryLocation => {
    const output = decoded.outputs?.[i];
    return output?.sharedMemory ?? ((output?.binary ?? decoded.binaryByDefault) ? 'binary' : 'json');
  };
  checkJsonBound(tensors.filter((_, i) => format(i) === 'json'), jsonLimit);
  const chunks: Uint8Array[] = [];
  const outputs: (JsonTensor | JsonTensorHeader)[] = [];
  for (const [i, tensor] of tensors.entries()) {
    const how = format(i);
    if (how === 'json') outputs.push(encodeJsonTensor(tensor));
    else if (how === 'binary') {
      const encoded = encodeBinaryOutput(tensor);
      chunks.push(encoded.bytes);
      outputs.push(encoded.header);
    } else outputs.push(await writeSharedMemoryOutput(sharedMemory, tensor, how));
  }
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

/**
 * Refuses JSON outputs that could take more than `limit` bytes, from their sizes alone: JSON costs up
 * to 25 bytes an FP32 element, so a tensor that came in binary or from shared memory would otherwise
 * hold the HTTP thread for seconds in JSON.stringify, and past V8's longest string fail with a
 * RangeError. The request body's limit serves as the answer's, as Triton bounds neither and clients
 * already size their requests by it.
 */
function checkJsonBound(tensors: readonly Tensor[], limit: number): void {
  const bound = tensors.reduce((sum, tensor) => sum + jsonTensorByteBound(tensor), 0);
  if (bound > limit) throw createError('SF_ERR_JSON_ANSWER_TOO_LARGE', bound, limit, tensors.map((t) => `'${t.name}'`).join(', '));
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
