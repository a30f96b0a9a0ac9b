import { createError } from '../errors/index.js';
import type { InferenceModelInfo, InferRequest, InferResponse } from '../inference/inference-model.js';
import { createTensor, tensorToJsonValues, type JsonTensorValue } from '../tensor/index.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import { buildInferRequest, describe, isObject, isParameterValue, splitReservedParameters, type Parameters } from './infer-request-decoder.js';
import { checkJsonDepth } from '../validation/json-depth.js';

/**
 * The JSON of Triton's generate extension (extension_generate.md): a flat request object whose
 * fields named after model inputs are tensors and whose other fields are parameters, and a flat
 * response object with one field per output.
 */

/**
 * Reads `$generate_request`: optional `id`, optional `parameters` (string, number or boolean
 * values), and any other field: an input of the model when one has its name (a scalar is shape
 * [1], an array keeps its nesting as its shape, and a batching model gets a batch dimension of 1),
 * a parameter otherwise. Reserved parameters (priority, timeout) apply as on /infer.
 */
export function decodeGenerateRequest(body: Buffer, info: InferenceModelInfo): InferRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw createError('SF_ERR_BODY_INVALID_JSON', (err as Error).message);
  }
  checkJsonDepth(parsed);
  if (!isObject(parsed)) throw createError('SF_ERR_BAD_REQUEST', `The generate request must be a JSON object, got ${describe(parsed)}.`);
  const { id, parameters, ...fields } = parsed;
  if (id !== undefined && typeof id !== 'string') throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'id': expected a string, got ${describe(id)}.`);
  const passed: Parameters = { ...readParameters(parameters) };
  const inputs: Tensor[] = [];
  for (const [name, value] of Object.entries(fields)) {
    const spec = info.inputs.find((s) => s.name === name);
    if (spec) {
      inputs.push(toTensor(spec, value, info.maxBatchSize > 0));
    } else if (isParameterValue(value)) {
      passed[name] = value;
    } else {
      throw createError('SF_ERR_BAD_REQUEST', `'${name}' is not an input of model '${info.name}', and as a parameter it must be a string, number or boolean, got ${describe(value)}.`);
    }
  }
  return buildInferRequest(id, inputs, undefined, splitReservedParameters(passed));
}

/** `$generate_response`: the id, model name and version, then each output: its one element, or its elements as a flat array. */
export function encodeGenerateResponse(response: InferResponse, requestId?: string): Record<string, unknown> {
  const id = response.id ?? requestId;
  const body: Record<string, unknown> = { ...(id ? { id } : {}), model_name: response.modelName, model_version: response.modelVersion };
  for (const tensor of response.outputs) {
    const values: JsonTensorValue[] = tensorToJsonValues(tensor);
    body[tensor.name] = values.length === 1 ? values[0] : values;
  }
  return body;
}

function toTensor(spec: TensorSpec, value: unknown, batched: boolean): Tensor {
  const shape = Array.isArray(value) ? nestedShape(spec.name, value) : [1];
  const flat = Array.isArray(value) ? value.flat(Infinity) : [value];
  return createTensor(spec.name, spec.datatype, batched ? [1, ...shape] : shape, flat);
}

/** The dimensions of a nested array, which must be rectangular. */
function nestedShape(name: string, value: readonly unknown[]): number[] {
  const inner = value.map((item) => (Array.isArray(item) ? nestedShape(name, item) : []));
  const first = JSON.stringify(inner[0] ?? []);
  if (inner.some((dims) => JSON.stringify(dims) !== first)) {
    throw createError('SF_ERR_TENSOR_DATA', name, 'a nested array must be rectangular: every element at one depth of the same length.');
  }
  return [value.length, ...(inner[0] ?? [])];
}

function readParameters(parameters: unknown): Parameters {
  if (parameters === undefined) return {};
  if (!isObject(parameters) || !Object.values(parameters).every(isParameterValue)) {
    throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'parameters': expected an object of string, number or boolean values, got ${describe(parameters)}.`);
  }
  return parameters as Parameters;
}
