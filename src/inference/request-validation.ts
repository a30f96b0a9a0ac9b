import { createError } from '../errors/index.js';
import { checkTensorAgainstSpec, elementCount, formatShape, withBatchDim } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import type { InferenceModelInfo, InferRequest } from './inference-model.js';
import { batchSignature } from '../tensor/tensor-batching.js';
import type { ValidatedRequest } from '../engine/instance-engine.js';
import type { ConfigTensor } from '../spec/config-tensor.js';

/**
 * Checks a request against the model's inputs and outputs as Triton does before queueing it: every
 * input known, given once, of the declared datatype and shape (with the batch dimension in front
 * when the model batches), one batch size across inputs, within max_batch_size, and only known
 * outputs requested. Returns the request as the instance receives it.
 */
export function validateInferRequest(info: InferenceModelInfo, request: InferRequest): ValidatedRequest {
  const given = new Map<string, Tensor>();
  for (const tensor of request.inputs) {
    if (given.has(tensor.name)) throw createError('SF_ERR_TENSOR_DATA', tensor.name, 'is given more than once.');
    if (!info.inputs.some((spec) => spec.name === tensor.name)) throw createError('SF_ERR_TENSOR_UNEXPECTED', tensor.name, info.name);
    given.set(tensor.name, tensor);
  }
  const batched = info.maxBatchSize > 0;
  const inputs: Tensor[] = [];
  for (const spec of info.inputs) {
    const tensor = given.get(spec.name);
    if (!tensor) {
      if (!spec.optional) throw createError('SF_ERR_TENSOR_MISSING', spec.name, info.name);
      continue;
    }
    checkTensorAgainstSpec(tensor, { ...spec, shape: withBatchDim(spec.shape, info.maxBatchSize) });
    if (tensor.data.length !== elementCount(tensor.shape)) {
      throw createError('SF_ERR_TENSOR_DATA', tensor.name, `shape ${formatShape(tensor.shape)} needs ${elementCount(tensor.shape)} elements, got ${tensor.data.length}.`);
    }
    inputs.push(tensor);
  }
  const rows = batched ? batchRows(info, inputs) : 1;
  return {
    wire: { id: request.id, inputs, outputs: requestedOutputs(info, request), parameters: request.parameters ?? {} },
    rows,
    signature: batchSignature(inputs),
  };
}

function batchRows(info: InferenceModelInfo, inputs: readonly Tensor[]): number {
  const rows = inputs[0]?.shape[0] ?? 1;
  const other = inputs.find((t) => t.shape[0] !== rows);
  if (other) throw createError('SF_ERR_BAD_REQUEST', `input '${other.name}' batch size does not match other inputs for '${info.name}'`);
  if (rows > info.maxBatchSize) throw createError('SF_ERR_BAD_REQUEST', `inference request batch-size must be <= ${info.maxBatchSize} for '${info.name}'`);
  return rows;
}

/**
 * Refuses inputs with a zero-sized dimension, for a @Tensors class: zero rows always (an
 * execution of nothing), any other empty dimension unless the input declares `allowEmpty`.
 * Triton hands empty tensors to the backend; here they would reach the class's execute and the
 * backends it calls, which fail on them with a server error (ONNX Runtime's Conv: "Invalid input
 * shape"), when the request is what is wrong.
 */
export function checkNoEmptyDims(info: InferenceModelInfo, request: ValidatedRequest, inputs: readonly ConfigTensor[]): void {
  for (const tensor of request.wire.inputs) {
    const empty = tensor.shape.indexOf(0);
    if (empty === -1) continue;
    const batchDim = empty === 0 && info.maxBatchSize > 0;
    if (!batchDim && inputs.find((spec) => spec.name === tensor.name)?.allowEmpty) continue;
    const what = batchDim ? 'a batch of 0 rows' : `an empty dimension (index ${empty})`;
    throw createError('SF_ERR_TENSOR_DATA', tensor.name, `shape ${formatShape(tensor.shape)} has ${what}; model '${info.name}' takes no empty input there.`);
  }
}

/** Refuses an output the model does not have, before the model runs (Triton's message). */
export function checkOutputName(name: string, info: InferenceModelInfo): void {
  if (!info.outputs.some((o) => o.name === name)) throw createError('SF_ERR_OUTPUT_UNKNOWN', name, info.name);
}

function requestedOutputs(info: InferenceModelInfo, request: InferRequest): string[] {
  if (request.outputs === undefined || request.outputs.length === 0) return info.outputs.map((o) => o.name);
  const names: string[] = [];
  for (const { name } of request.outputs) {
    checkOutputName(name, info);
    if (!names.includes(name)) names.push(name);
  }
  return names;
}
