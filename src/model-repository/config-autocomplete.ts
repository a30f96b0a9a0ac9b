import type { BackendMetadata } from '../backends/backend.js';
import { createError, type ServeFnError } from '../errors/index.js';
import { DEFAULT_MAX_BATCH_SIZE } from '../spec/batch-policy.js';
import { fromConfigDatatype, toConfigDatatype } from '../tensor/datatype-info.js';
import { formatShape, shapesCompatible, withBatchDim } from '../tensor/tensor-factory.js';
import type { TensorSpec } from '../spec/tensor.js';
import type { ModelConfig, ModelInput, ModelOutput } from './model-config.js';

export function needsAutoComplete(config: ModelConfig): boolean {
  return config.input.length === 0 || config.output.length === 0;
}

/**
 * Triton's onnxruntime backend auto-complete (ModelState::AutoCompleteConfig), applied to any
 * model file whose inputs and outputs the backend can list. It runs only when config.pbtxt lacks
 * `input` or `output` (or is absent):
 * - the model can batch when every input and output has a variable (-1) first dimension; then a
 *   max_batch_size of 0 becomes DEFAULT_MAX_BATCH_SIZE (a model with batch gears: its largest), and with max_batch_size > 1 and no
 *   scheduler (neither dynamic_batching nor sequence_batching) `dynamic_batching {}` is added (preferred size [max_batch_size], as Triton's
 *   normalisation then fills in). A model that cannot batch with max_batch_size > 0 is an error;
 * - a missing `input` / `output` list is filled from the model, dims without the batch dimension
 *   when batching; a tensor left with no dims gets dims [1] (plus `reshape { shape: [] }` when
 *   batching), as Triton writes it.
 */
export function autoCompleteConfig(config: ModelConfig, model: BackendMetadata, file: string): ModelConfig {
  if (!needsAutoComplete(config)) return config;
  const batchable = [...model.inputs, ...model.outputs].every((spec) => spec.shape.length > 0 && spec.shape[0] === -1);
  let maxBatchSize = config.max_batch_size;
  let dynamicBatching = config.dynamic_batching;
  if (batchable) {
    // A model compiled for fixed batch sizes (an .om's dynamic-batch gears) batches up to its largest, as
    // Triton's TensorRT backend takes max_batch_size from the engine's largest profile batch.
    if (maxBatchSize === 0) maxBatchSize = model.batchSizes?.length ? Math.max(...model.batchSizes) : DEFAULT_MAX_BATCH_SIZE;
    if (maxBatchSize > 1 && !dynamicBatching && !config.sequence_batching) {
      dynamicBatching = {
        preferred_batch_size: [maxBatchSize], max_queue_delay_microseconds: 0, preserve_ordering: false,
        priority_levels: 0, default_priority_level: 0, priority_queue_policy: {},
      };
    }
  } else if (maxBatchSize !== 0) {
    throw createError('SF_ERR_CONFIG_INVALID', config.name, `autofill failed: model does not support batching while non-zero max_batch_size is specified (${file} needs a variable first dimension on every input and output)`);
  }
  const trim = (spec: TensorSpec): Pick<ModelInput, 'dims' | 'reshape'> => {
    const dims = spec.shape.slice(maxBatchSize > 0 ? 1 : 0);
    if (dims.length > 0) return { dims };
    return maxBatchSize > 0 ? { dims: [1], reshape: { shape: [] } } : { dims: [1] };
  };
  const input = config.input.length > 0 ? config.input : model.inputs.map((spec): ModelInput => ({
    name: spec.name, data_type: toConfigDatatype(spec.datatype), format: 'FORMAT_NONE', ...trim(spec),
    is_shape_tensor: false, allow_ragged_batch: false, optional: false,
  }));
  const output = config.output.length > 0 ? config.output : model.outputs.map((spec): ModelOutput => ({
    name: spec.name, data_type: toConfigDatatype(spec.datatype), ...trim(spec), label_filename: '', is_shape_tensor: false,
  }));
  return { ...config, max_batch_size: maxBatchSize, dynamic_batching: dynamicBatching, input, output };
}

/**
 * Checks config.pbtxt's inputs and outputs against the model file, as Triton's backends do when an
 * instance starts: every declared tensor exists in the model with that datatype and a compatible
 * shape (reshape, when given, is what the model sees), and no model input is left undeclared.
 */
export function checkConfigAgainstModel(config: ModelConfig, model: BackendMetadata, file: string): void {
  const invalid = (why: string): ServeFnError => createError('SF_ERR_CONFIG_INVALID', config.name, why);
  const check = (kind: 'input' | 'output', declared: ModelInput | ModelOutput, specs: readonly TensorSpec[]): void => {
    const spec = specs.find((s) => s.name === declared.name);
    if (!spec) throw invalid(`${kind} '${declared.name}' is not an ${kind} of ${file} (it has ${specs.map((s) => s.name).join(', ')})`);
    if (fromConfigDatatype(declared.data_type) !== spec.datatype) {
      throw invalid(`${kind} '${declared.name}' is ${declared.data_type} in the configuration but ${toConfigDatatype(spec.datatype)} in ${file}`);
    }
    const own = declared.reshape?.shape ?? declared.dims;
    const expected = withBatchDim(own, config.max_batch_size);
    if (!shapesCompatible(expected, spec.shape)) {
      const batch = config.max_batch_size > 0 ? ', batch dimension included' : '';
      throw invalid(`${kind} '${declared.name}' has shape ${formatShape(expected)} in the configuration${batch}, but ${formatShape(spec.shape)} in ${file}`);
    }
  };
  for (const input of config.input) check('input', input, model.inputs);
  for (const output of config.output) check('output', output, model.outputs);
  const undeclared = model.inputs.find((spec) => !config.input.some((i) => i.name === spec.name));
  if (undeclared) throw invalid(`${file} needs input '${undeclared.name}', which the configuration does not declare`);
}
