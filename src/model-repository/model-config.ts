import { parsePbtxt, type PbtxtMessage } from './pbtxt-parser.js';
import { ConfigDecoder } from './model-config-decoder.js';
import { applyTritonDefaults, messageToJson } from './model-config-defaults.js';
import { MODEL_CONFIG } from './model-config-schema.js';
import type { BuiltModelConfig, ModelConfig } from '../spec/model-config-types.js';

export * from '../spec/model-config-types.js';

/**
 * Types the parsed tree, then fills in what Triton's NormalizeModelConfig and
 * NormalizeInstanceGroup (core/src/model_config_utils.cc) fill in without looking at the model
 * folder or the GPUs:
 * - `name`: `modelName` (the model's folder) when the file gives none;
 * - `version_policy`: `{ latest: { num_versions: 1 } }` when absent or empty;
 * - `dynamic_batching.preferred_batch_size` and `sequence_batching.oldest.preferred_batch_size`:
 *   `[max_batch_size]` when empty and max_batch_size > 0;
 * - `sequence_batching.max_sequence_idle_microseconds`: 1000000 when 0;
 * - `instance_group` (not for ensembles): one group named after the model when none is given;
 *   a group without a name becomes `<model>_<index>`; a count below 1 becomes 1, or 2 for
 *   KIND_CPU on the onnxruntime and tensorflow backends.
 * Everything else keeps its proto3 default (max_batch_size 0, KIND_AUTO, REJECT, ...). Resolving
 * KIND_AUTO to CPU or GPU and filling platform/backend from model files are left to the loader.
 */
export function buildModelConfig(tree: PbtxtMessage, file: string, modelName = ''): BuiltModelConfig {
  const decoder = new ConfigDecoder(file);
  const config = decoder.decodeMessage(MODEL_CONFIG, tree) as unknown as ModelConfig;
  applyTritonDefaults(config, modelName);
  return { config, warnings: decoder.warnings };
}

export function parseModelConfig(source: string, file: string, modelName = ''): BuiltModelConfig {
  return buildModelConfig(parsePbtxt(source, file), file, modelName);
}

/**
 * The JSON Triton serves at `GET /v2/models/{m}/config`, checked against core's ModelConfigToJson:
 * protobuf's printer with preserve_proto_field_names (snake_case keys) and
 * always_print_primitive_fields (every scalar, list and map printed even when default; unset
 * messages and unset oneof members left out), enums by name, then the 64-bit integers rewritten
 * from protobuf's strings to numbers. That rewrite misses `sequence_batching.state.initial_state.dims`
 * (it looks the field up on sequence_batching), so those stay strings, as here. Map keys are
 * strings, as JSON requires. Fields serve-fn does not read are printed with their defaults, as
 * Triton prints them when unset. Keys come in field-number order; key order carries no meaning.
 */
export function modelConfigToJson(config: ModelConfig): Record<string, unknown> {
  return messageToJson(MODEL_CONFIG, config as unknown as Record<string, unknown>);
}
