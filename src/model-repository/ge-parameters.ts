import { createError } from '../errors/index.js';
import type { ModelConfig } from './model-config.js';

/**
 * config.pbtxt `parameters` of an npu_ge model, with the names and rules of Huawei's Triton GE
 * backend (hicann/triton-inference-server-ge-backend: src/model_state.cpp ParseModelParametersConfig
 * and SetOptions, src/model_instance_state.cpp CalculateDeviceExecBlock and StaticModeConfig(One),
 * example/resnet/config.pbtxt, docs/性能调优方法论.md):
 * - `device_ids` ("2", "0,1"): the NPUs the model runs on;
 * - `instance_exec_blocks` / `device_exec_blocks`: execution slots (instance-placement.ts);
 * - `precision_mode_v2`: GE's ge.exec.precision_mode_v2 for each session (serve-fn's default is
 *   "origin", the ONNX file's own precision; GE's own inference default would be fp16);
 * - `static_model` "1": the graph is compiled for the configuration's fixed shapes, batch 1 when the
 *   model batches (batches then run row by row); not together with dynamic_batching;
 * - `ge.*` (GEInitialize), `global.ge.*`, `session.ge.*`, `graph.ge.*`: passed to GE in that scope,
 *   but `ge.aicoreNum` to each session in any scope (ge-load-options.ts).
 * Other parameters (the backend's dump_graph, profiling, dump_data among them) are ignored, as
 * Triton ignores parameters a backend does not read.
 */

function parameter(config: ModelConfig, key: string): string | undefined {
  return config.parameters[key]?.string_value;
}

function wholeNumber(config: ModelConfig, key: string): number | undefined {
  const text = parameter(config, key);
  if (text === undefined) return undefined;
  if (!/^\s*\d+\s*$/.test(text) || Number(text) < 1) {
    throw createError('SF_ERR_CONFIG_INVALID', config.name, `parameter ${key} must be a whole number >= 1, got '${text}'`);
  }
  return Number(text);
}

/** `device_ids` as NPU ids; undefined when the parameter is absent. */
export function geDeviceIds(config: ModelConfig): number[] | undefined {
  const text = parameter(config, 'device_ids');
  if (text === undefined) return undefined;
  const ids = text.split(',').map((id) => id.trim()).filter((id) => id !== '');
  if (ids.length === 0 || ids.some((id) => !/^\d+$/.test(id))) {
    throw createError('SF_ERR_CONFIG_INVALID', config.name, `parameter device_ids must list NPU ids such as "0" or "0,1", got '${text}'`);
  }
  return [...new Set(ids.map(Number))];
}

function isStatic(config: ModelConfig): boolean {
  return parameter(config, 'static_model')?.trim() === '1';
}

/** What can be checked as the configuration is read: the numbers, and static_model without dynamic_batching. */
export function checkGeParameters(config: ModelConfig): void {
  geDeviceIds(config);
  wholeNumber(config, 'instance_exec_blocks');
  wholeNumber(config, 'device_exec_blocks');
  if (isStatic(config) && config.dynamic_batching) {
    throw createError('SF_ERR_CONFIG_INVALID', config.name, 'parameter static_model "1" compiles a fixed-shape graph and cannot be combined with dynamic_batching; remove one of them');
  }
}

/** `instance_exec_blocks` and `device_exec_blocks`, as numbers; undefined where absent. */
export function geExecBlocks(config: ModelConfig): { instance?: number; device?: number } {
  return { instance: wholeNumber(config, 'instance_exec_blocks'), device: wholeNumber(config, 'device_exec_blocks') };
}

/**
 * The GE scopes of config.pbtxt `parameters` passed through, and precision_mode_v2 for each
 * session: what a model that loads its ONNX file itself on an NPU (a pipeline's VAE stage) takes.
 */
export function geSessionOptions(parameters: Readonly<Record<string, { readonly string_value: string }>>): Record<string, string> {
  const options: Record<string, string> = {};
  for (const [key, { string_value }] of Object.entries(parameters)) {
    if (/^(global\.|session\.|graph\.)?ge\./.test(key)) options[key] = string_value;
  }
  const precision = parameters.precision_mode_v2?.string_value;
  if (precision !== undefined) options['session.ge.exec.precision_mode_v2'] = precision;
  return options;
}

/**
 * The npu_ge load options (src/backends/npu/ge-load-options.ts) a configuration asks for, once its
 * inputs are known: the GE scopes passed through, precision_mode_v2 for each session, and
 * static_model's parser input_shape (`name:1,d1,...` when the model batches, `name:d0,...` otherwise).
 */
export function geLoadOptions(config: ModelConfig): Record<string, string> {
  const options = geSessionOptions(config.parameters);
  if (isStatic(config)) {
    const shapes = config.input.map((input) => {
      const dims = input.reshape?.shape ?? input.dims;
      if (dims.some((d) => d < 0)) {
        throw createError('SF_ERR_CONFIG_INVALID', config.name, `parameter static_model "1" needs fixed dims, but input '${input.name}' has dims [${dims.join(', ')}]`);
      }
      return `${input.name}:${(config.max_batch_size > 0 ? [1, ...dims] : dims).join(',')}`;
    });
    options.input_shape = shapes.join(';');
  }
  return options;
}
