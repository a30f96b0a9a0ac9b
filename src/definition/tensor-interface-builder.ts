import { createError } from '../errors/index.js';
import type { ConfigTensor } from '../spec/config-tensor.js';
import type { BatchRecord, EndpointRecord, TensorDeclaration, TensorsRecord } from '../metadata/records.js';
import { normalizeBatchPolicy } from '../spec/batch-policy.js';
import { DATATYPES } from '../spec/tensor.js';
import { isDatatype } from '../tensor/datatype-info.js';
import type { ModelClass, TensorInterfaceDefinition } from './model-definition.js';

/** The method a tensor interface runs, named as in Triton's Python backend. */
export const EXECUTE_METHOD = 'execute';

/**
 * Checks a class's @Tensors record against Triton's rules for a model configuration's inputs and
 * outputs (unique names, KServe datatypes, dims of sizes >= 1 or -1) and its `execute` method.
 */
export function buildTensorInterface(
  target: ModelClass,
  record: TensorsRecord,
  batch: BatchRecord | undefined,
  endpoints: readonly EndpointRecord[],
): TensorInterfaceDefinition {
  const invalid = (why: string) => createError('SF_ERR_TENSORS_INVALID', target.name, why);
  const { options } = record;
  if (typeof (target.prototype as Record<string, unknown>)[EXECUTE_METHOD] !== 'function') {
    throw invalid('needs an execute(requests) method that returns one response per request');
  }
  // An endpoint method takes DTOs and a tensor interface takes ExecuteRequests; one method cannot be both.
  if (endpoints.some((e) => e.method === EXECUTE_METHOD)) throw invalid('execute is also an @Endpoint: give the endpoint another method name');
  const inputs = declarations(options.inputs, 'input', invalid);
  const outputs = declarations(options.outputs, 'output', invalid);
  if (outputs.some((o) => o.optional)) throw invalid('outputs cannot be optional');
  const policy = batch ? normalizeBatchPolicy(batch.policy, `${target.name}.${EXECUTE_METHOD}`) : undefined;
  if (batch && batch.metadataEmitted && batch.firstParamType !== Array) throw createError('SF_ERR_BATCH_NOT_LIST', `${target.name}.${EXECUTE_METHOD}`, 'ExecuteRequest');
  const maxBatchSize = options.maxBatchSize ?? policy?.maxBatchSize ?? 0;
  if (!Number.isSafeInteger(maxBatchSize) || maxBatchSize < 0) throw invalid(`maxBatchSize must be an integer >= 0 (got ${String(maxBatchSize)})`);
  // Triton batches only along a batch dimension, which max_batch_size 0 says the model lacks.
  if (policy && maxBatchSize === 0) throw invalid('has maxBatchSize 0, so its requests have no batch dimension to batch along: set maxBatchSize > 0, or remove @Batch from execute');
  return Object.freeze({ inputs, outputs, maxBatchSize, ...(policy ? { batch: policy } : {}) });
}

function declarations(list: unknown, kind: 'input' | 'output', invalid: (why: string) => Error): readonly ConfigTensor[] {
  if (!Array.isArray(list) || list.length === 0) throw invalid(`needs at least one ${kind} ({ name, datatype, dims })`);
  const names = new Set<string>();
  const tensors = (list as unknown[]).map((item): ConfigTensor => {
    const t = (item ?? {}) as Partial<TensorDeclaration>;
    if (typeof t.name !== 'string' || t.name === '') throw invalid(`an ${kind} has no name`);
    if (names.has(t.name)) throw invalid(`declares ${kind} '${t.name}' twice`);
    names.add(t.name);
    if (!isDatatype(t.datatype)) throw invalid(`${kind} '${t.name}' has datatype ${JSON.stringify(t.datatype) ?? 'undefined'}; use one of ${DATATYPES.join(', ')}`);
    const dims = t.dims;
    if (!Array.isArray(dims) || dims.some((d) => !Number.isSafeInteger(d) || d === 0 || d < -1)) {
      throw invalid(`${kind} '${t.name}' has dims ${JSON.stringify(dims) ?? 'undefined'}; each must be a size >= 1 or -1`);
    }
    if (t.allowEmpty !== undefined && (kind === 'output' || typeof t.allowEmpty !== 'boolean')) throw invalid(`${kind} '${t.name}': allowEmpty is a boolean of inputs`);
    return Object.freeze({ name: t.name, datatype: t.datatype, dims: Object.freeze([...dims]), optional: t.optional === true, ...(t.allowEmpty ? { allowEmpty: true } : {}) });
  });
  return Object.freeze(tensors);
}
