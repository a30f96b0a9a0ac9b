import type { ModelConfig } from '../spec/model-config-types.js';
import type { FieldType, MessageSchema } from './model-config-schema.js';
import type { Decoded } from './model-config-decoder.js';

/** Triton's defaults (see buildModelConfig) and the JSON Triton prints for a ModelConfig. */
const BACKENDS_WITH_TWO_CPU_INSTANCES = new Set(['onnxruntime', 'tensorflow']);
const PLATFORM_BACKENDS: Readonly<Record<string, string>> = {
  onnxruntime_onnx: 'onnxruntime',
  tensorflow_graphdef: 'tensorflow',
  tensorflow_savedmodel: 'tensorflow',
};

export function applyTritonDefaults(config: ModelConfig, modelName: string): void {
  if (config.name === '') config.name = modelName;
  if (config.version_policy === undefined || Object.keys(config.version_policy).length === 0) {
    config.version_policy = { latest: { num_versions: 1 } };
  }
  const preferredDefault = (): number[] => (config.max_batch_size > 0 ? [config.max_batch_size] : []);
  const dynamic = config.dynamic_batching;
  if (dynamic && dynamic.preferred_batch_size.length === 0) dynamic.preferred_batch_size = preferredDefault();
  const sequence = config.sequence_batching;
  if (sequence) {
    if (sequence.max_sequence_idle_microseconds === 0) sequence.max_sequence_idle_microseconds = 1_000_000;
    if (sequence.oldest && sequence.oldest.preferred_batch_size.length === 0) sequence.oldest.preferred_batch_size = preferredDefault();
  }
  if (config.ensemble_scheduling) return;
  if (config.instance_group.length === 0) {
    config.instance_group.push({ name: config.name, count: 0, gpus: [], kind: 'KIND_AUTO' });
  }
  const backend = config.backend || PLATFORM_BACKENDS[config.platform] || '';
  config.instance_group.forEach((group, index) => {
    if (group.name === '') group.name = `${config.name}_${index}`;
    if (group.count < 1) group.count = group.kind === 'KIND_CPU' && BACKENDS_WITH_TWO_CPU_INSTANCES.has(backend) ? 2 : 1;
  });
}

export function messageToJson(schema: MessageSchema, value: Decoded): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema.fields)) {
    if (spec.label === 'ignored') {
      if (spec.json !== undefined) json[name] = structuredClone(spec.json);
      continue;
    }
    const field = value[name];
    if (field === undefined) continue;
    if (spec.label === 'repeated') json[name] = (field as unknown[]).map((item) => valueToJson(spec.type, item));
    else if (spec.label === 'map') {
      json[name] = Object.fromEntries(Object.entries(field as Decoded).map(([key, item]) => [key, valueToJson(spec.type, item)]));
    } else json[name] = valueToJson(spec.type, field);
  }
  return json;
}

function valueToJson(type: FieldType, value: unknown): unknown {
  if (type.kind === 'message') return messageToJson(type.schema, value as Decoded);
  if ('jsonAsString' in type && type.jsonAsString) return String(value);
  // proto3 JSON spells non-finite floats as these strings.
  if (type.kind === 'float' && !Number.isFinite(value)) {
    return Number.isNaN(value) ? 'NaN' : (value as number) > 0 ? 'Infinity' : '-Infinity';
  }
  return value;
}

