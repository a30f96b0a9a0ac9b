import { createError } from '../errors/index.js';
import { checkJsonDepth } from '../validation/json-depth.js';
import { buildModelConfig, type BuiltModelConfig } from './model-config.js';
import type { PbtxtField, PbtxtList, PbtxtMessage, PbtxtScalar, PbtxtValue } from './pbtxt-parser.js';

/**
 * Reads a ModelConfig given as JSON (Triton's `config` parameter of a load request, the form
 * `GET /v2/models/{m}/config` serves) by turning it into the tree the config.pbtxt parser builds,
 * so both forms get the same typing, defaults and errors. JSON does not say which strings are enum
 * names or 64-bit integers (protobuf's JSON writes both as strings) or which objects are maps, so
 * those fields of ModelConfig are listed here by name.
 */

const ENUM_FIELDS: ReadonlySet<string> = new Set(['data_type', 'format', 'kind', 'timeout_action']);
const INT64_FIELDS: ReadonlySet<string> = new Set([
  'dims', 'shape', 'versions', 'num_versions', 'max_batch_size', 'max_queue_delay_microseconds', 'default_timeout_microseconds',
  'priority_levels', 'default_priority_level', 'model_version', 'max_sequence_idle_microseconds', 'count', 'batch_size',
]);
/** Map fields, with whether their keys are integers. */
const MAP_FIELDS: ReadonlyMap<string, boolean> = new Map([
  ['parameters', false], ['input_map', false], ['output_map', false], ['inputs', false], ['metric_tags', false],
  ['cc_model_filenames', false], ['priority_queue_policy', true],
]);
const AT = { line: 1, column: 1 } as const;

export function parseModelConfigJson(json: string, modelName: string): BuiltModelConfig {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw createError('SF_ERR_CONFIG_INVALID', modelName, `the config parameter is not valid JSON: ${(err as Error).message}`);
  }
  // The config comes inside a load request, and toMessage() recurses as deep as it nests.
  checkJsonDepth(value);
  if (!isObject(value)) throw createError('SF_ERR_CONFIG_INVALID', modelName, 'the config parameter must be a JSON object');
  return buildModelConfig(toMessage(value, modelName), `config parameter of '${modelName}'`, modelName);
}

function toMessage(object: Record<string, unknown>, model: string): PbtxtMessage {
  const fields: PbtxtField[] = [];
  for (const [name, value] of Object.entries(object)) {
    if (value === null) continue;
    fields.push({ name, value: MAP_FIELDS.has(name) ? toMapEntries(name, value, model) : toValue(name, value, model), ...AT });
  }
  return { kind: 'message', fields, ...AT };
}

function toMapEntries(field: string, value: unknown, model: string): PbtxtList {
  if (!isObject(value)) throw createError('SF_ERR_CONFIG_INVALID', model, `'${field}' must be a JSON object`);
  const integerKeys = MAP_FIELDS.get(field)!;
  const items = Object.entries(value).map(([key, item]): PbtxtMessage => ({
    kind: 'message',
    fields: [
      { name: 'key', value: { kind: integerKeys ? 'integer' : 'string', text: key, ...AT }, ...AT },
      { name: 'value', value: toValue(field, item, model) as PbtxtScalar | PbtxtMessage, ...AT },
    ],
    ...AT,
  }));
  return { kind: 'list', items, ...AT };
}

function toValue(field: string, value: unknown, model: string): PbtxtValue {
  if (Array.isArray(value)) return { kind: 'list', items: value.map((item) => toValue(field, item, model) as PbtxtScalar | PbtxtMessage), ...AT };
  if (isObject(value)) return toMessage(value, model);
  if (typeof value === 'boolean') return { kind: 'identifier', text: String(value), ...AT };
  if (typeof value === 'number') return { kind: Number.isInteger(value) ? 'integer' : 'float', text: String(value), ...AT };
  if (typeof value === 'string') {
    if (ENUM_FIELDS.has(field)) return { kind: 'identifier', text: value, ...AT };
    if (INT64_FIELDS.has(field) && /^-?\d+$/.test(value)) return { kind: 'integer', text: value, ...AT };
    return { kind: 'string', text: value, ...AT };
  }
  throw createError('SF_ERR_CONFIG_INVALID', model, `'${field}' has a value JSON cannot map to the model configuration`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
