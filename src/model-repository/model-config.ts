import { createError } from '../errors/index.js';
import {
  parsePbtxt, type PbtxtField, type PbtxtMessage, type PbtxtPosition, type PbtxtScalar, type PbtxtValue,
} from './pbtxt-parser.js';

/**
 * The part of Triton's ModelConfig (common/protobuf/model_config.proto) that serve-fn reads, typed
 * with the proto's own snake_case names so Triton's docs apply as written. Scalars always hold a
 * value (the proto3 default when not written); a message field is `undefined` until set.
 */

export const CONFIG_DATA_TYPES = [
  'TYPE_INVALID', 'TYPE_BOOL', 'TYPE_UINT8', 'TYPE_UINT16', 'TYPE_UINT32', 'TYPE_UINT64', 'TYPE_INT8', 'TYPE_INT16',
  'TYPE_INT32', 'TYPE_INT64', 'TYPE_FP16', 'TYPE_FP32', 'TYPE_FP64', 'TYPE_STRING', 'TYPE_BF16',
] as const;
export const INPUT_FORMATS = ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW'] as const;
export const INSTANCE_KINDS = ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'] as const;
export const CONTROL_KINDS = [
  'CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID',
] as const;
export const TIMEOUT_ACTIONS = ['REJECT', 'DELAY'] as const;

export type ConfigDataType = (typeof CONFIG_DATA_TYPES)[number];
export type InputFormat = (typeof INPUT_FORMATS)[number];
export type InstanceKind = (typeof INSTANCE_KINDS)[number];
export type ControlKind = (typeof CONTROL_KINDS)[number];
export type TimeoutAction = (typeof TIMEOUT_ACTIONS)[number];

export interface ModelTensorReshape { shape: number[] }

export interface ModelInput {
  name: string;
  data_type: ConfigDataType;
  format: InputFormat;
  dims: number[];
  reshape?: ModelTensorReshape;
  is_shape_tensor: boolean;
  allow_ragged_batch: boolean;
  optional: boolean;
}

export interface ModelOutput {
  name: string;
  data_type: ConfigDataType;
  dims: number[];
  label_filename: string;
  reshape?: ModelTensorReshape;
  is_shape_tensor: boolean;
}

export interface ModelInstanceGroup { name: string; count: number; gpus: number[]; kind: InstanceKind }

export interface ModelQueuePolicy {
  timeout_action: TimeoutAction;
  default_timeout_microseconds: number;
  allow_timeout_override: boolean;
  max_queue_size: number;
}

export interface ModelDynamicBatching {
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
  priority_levels: number;
  default_priority_level: number;
  default_queue_policy?: ModelQueuePolicy;
  /** Keyed by priority level. */
  priority_queue_policy: Record<number, ModelQueuePolicy>;
}

export interface SequenceControl {
  kind: ControlKind;
  int32_false_true: number[];
  fp32_false_true: number[];
  data_type: ConfigDataType;
  bool_false_true: boolean[];
}

export interface SequenceControlInput { name: string; control: SequenceControl[] }

/** At most one of `zero_data` and `data_file` is set. */
export interface SequenceInitialState {
  data_type: ConfigDataType;
  dims: number[];
  zero_data?: boolean;
  data_file?: string;
  name: string;
}

export interface SequenceState {
  input_name: string;
  output_name: string;
  data_type: ConfigDataType;
  dims: number[];
  initial_state: SequenceInitialState[];
  use_same_buffer_for_input_output: boolean;
  use_growable_memory: boolean;
}

export interface SequenceStrategyDirect { max_queue_delay_microseconds: number; minimum_slot_utilization: number }

export interface SequenceStrategyOldest {
  max_candidate_sequences: number;
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
}

/** At most one of `direct` and `oldest` is set. */
export interface ModelSequenceBatching {
  max_sequence_idle_microseconds: number;
  control_input: SequenceControlInput[];
  direct?: SequenceStrategyDirect;
  oldest?: SequenceStrategyOldest;
  state: SequenceState[];
  iterative_sequence: boolean;
}

export interface EnsembleStep {
  model_name: string;
  /** -1 = latest. Left at the proto default 0 when not written, as Triton does. */
  model_version: number;
  /** Step model input name → ensemble tensor name. */
  input_map: Record<string, string>;
  /** Step model output name → ensemble tensor name. */
  output_map: Record<string, string>;
}

export interface ModelEnsembling { step: EnsembleStep[]; max_inflight_requests: number }

export type ModelVersionPolicy =
  | { latest: { num_versions: number } }
  | { all: Record<string, never> }
  | { specific: { versions: number[] } };

/** At most one of `zero_data`, `random_data` and `input_data_file` is set. */
export interface ModelWarmupInput {
  data_type: ConfigDataType;
  dims: number[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

export interface ModelWarmup { name: string; batch_size: number; inputs: Record<string, ModelWarmupInput>; count: number }

/** At most one of `dynamic_batching`, `sequence_batching` and `ensemble_scheduling` is set. */
export interface ModelConfig {
  name: string;
  platform: string;
  version_policy: ModelVersionPolicy;
  max_batch_size: number;
  input: ModelInput[];
  output: ModelOutput[];
  instance_group: ModelInstanceGroup[];
  default_model_filename: string;
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: ModelSequenceBatching;
  parameters: Record<string, { string_value: string }>;
  ensemble_scheduling?: ModelEnsembling;
  model_warmup: ModelWarmup[];
  backend: string;
  model_transaction_policy?: { decoupled: boolean };
  response_cache?: { enable: boolean };
}

export interface BuiltModelConfig {
  readonly config: ModelConfig;
  /** `file:line:column: ...` for each field that was read but not used. */
  readonly warnings: string[];
}

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

// ---------------------------------------------------------------------------------------------
// Schema: the proto messages above, fields in field-number order.

type IntKind = 'int32' | 'uint32' | 'int64' | 'uint64';
type ScalarType =
  | { readonly kind: 'string' | 'bool' | 'float' }
  | { readonly kind: IntKind; readonly jsonAsString?: boolean }
  | { readonly kind: 'enum'; readonly name: string; readonly values: readonly string[] };
type FieldType = ScalarType | { readonly kind: 'message'; readonly schema: MessageSchema };

interface FieldSpec {
  readonly label: 'single' | 'repeated' | 'map' | 'ignored';
  readonly type: FieldType;
  readonly mapKey?: ScalarType;
  readonly oneof?: string;
  /** For ignored primitive fields: what Triton prints when the field is unset. */
  readonly json?: unknown;
}

interface MessageSchema {
  readonly name: string;
  readonly fields: Readonly<Record<string, FieldSpec>>;
}

const STRING: ScalarType = { kind: 'string' };
const BOOL: ScalarType = { kind: 'bool' };
const FLOAT: ScalarType = { kind: 'float' };
const INT32: ScalarType = { kind: 'int32' };
const UINT32: ScalarType = { kind: 'uint32' };
const INT64: ScalarType = { kind: 'int64' };
const UINT64: ScalarType = { kind: 'uint64' };
const DATA_TYPE: ScalarType = { kind: 'enum', name: 'DataType', values: CONFIG_DATA_TYPES };

const one = (type: FieldType, oneof?: string): FieldSpec => ({ label: 'single', type, oneof });
const many = (type: FieldType): FieldSpec => ({ label: 'repeated', type });
const map = (mapKey: ScalarType, type: FieldType): FieldSpec => ({ label: 'map', type, mapKey });
const ignored = (json?: unknown): FieldSpec => ({ label: 'ignored', type: STRING, json });
const msg = (name: string, fields: Record<string, FieldSpec>): FieldType => ({ kind: 'message', schema: { name, fields } });
const enumOf = (name: string, values: readonly string[]): ScalarType => ({ kind: 'enum', name, values });

const RESHAPE = msg('ModelTensorReshape', { shape: many(INT64) });
const QUEUE_POLICY = msg('ModelQueuePolicy', {
  timeout_action: one(enumOf('TimeoutAction', TIMEOUT_ACTIONS)),
  default_timeout_microseconds: one(UINT64),
  allow_timeout_override: one(BOOL),
  max_queue_size: one(UINT32),
});

const MODEL_CONFIG: MessageSchema = {
  name: 'ModelConfig',
  fields: {
    name: one(STRING),
    platform: one(STRING),
    version_policy: one(msg('ModelVersionPolicy', {
      latest: one(msg('Latest', { num_versions: one(UINT32) }), 'policy_choice'),
      all: one(msg('All', {}), 'policy_choice'),
      specific: one(msg('Specific', { versions: many(INT64) }), 'policy_choice'),
    })),
    max_batch_size: one(INT32),
    input: many(msg('ModelInput', {
      name: one(STRING),
      data_type: one(DATA_TYPE),
      format: one(enumOf('Format', INPUT_FORMATS)),
      dims: many(INT64),
      reshape: one(RESHAPE),
      is_shape_tensor: one(BOOL),
      allow_ragged_batch: one(BOOL),
      optional: one(BOOL),
      is_non_linear_format_io: ignored(false),
    })),
    output: many(msg('ModelOutput', {
      name: one(STRING),
      data_type: one(DATA_TYPE),
      dims: many(INT64),
      label_filename: one(STRING),
      reshape: one(RESHAPE),
      is_shape_tensor: one(BOOL),
      is_non_linear_format_io: ignored(false),
    })),
    instance_group: many(msg('ModelInstanceGroup', {
      name: one(STRING),
      count: one(INT32),
      gpus: many(INT32),
      kind: one(enumOf('Kind', INSTANCE_KINDS)),
      profile: ignored([]),
      rate_limiter: ignored(),
      passive: ignored(false),
      secondary_devices: ignored([]),
      host_policy: ignored(''),
    })),
    default_model_filename: one(STRING),
    cc_model_filenames: ignored({}),
    metric_tags: ignored({}),
    dynamic_batching: one(msg('ModelDynamicBatching', {
      preferred_batch_size: many(INT32),
      max_queue_delay_microseconds: one(UINT64),
      preserve_ordering: one(BOOL),
      priority_levels: one(UINT64),
      default_priority_level: one(UINT64),
      default_queue_policy: one(QUEUE_POLICY),
      priority_queue_policy: map(UINT64, QUEUE_POLICY),
    }), 'scheduling_choice'),
    optimization: ignored(),
    sequence_batching: one(msg('ModelSequenceBatching', {
      max_sequence_idle_microseconds: one(UINT64),
      control_input: many(msg('ControlInput', {
        name: one(STRING),
        control: many(msg('Control', {
          kind: one(enumOf('Kind', CONTROL_KINDS)),
          int32_false_true: many(INT32),
          fp32_false_true: many(FLOAT),
          data_type: one(DATA_TYPE),
          bool_false_true: many(BOOL),
        })),
      })),
      direct: one(msg('StrategyDirect', {
        max_queue_delay_microseconds: one(UINT64),
        minimum_slot_utilization: one(FLOAT),
      }), 'strategy_choice'),
      oldest: one(msg('StrategyOldest', {
        max_candidate_sequences: one(INT32),
        preferred_batch_size: many(INT32),
        max_queue_delay_microseconds: one(UINT64),
        preserve_ordering: one(BOOL),
      }), 'strategy_choice'),
      state: many(msg('State', {
        input_name: one(STRING),
        output_name: one(STRING),
        data_type: one(DATA_TYPE),
        dims: many(INT64),
        initial_state: many(msg('InitialState', {
          data_type: one(DATA_TYPE),
          dims: many({ kind: 'int64', jsonAsString: true }),
          zero_data: one(BOOL, 'state_data'),
          data_file: one(STRING, 'state_data'),
          name: one(STRING),
        })),
        use_same_buffer_for_input_output: one(BOOL),
        use_growable_memory: one(BOOL),
      })),
      iterative_sequence: one(BOOL),
    }), 'scheduling_choice'),
    parameters: map(STRING, msg('ModelParameter', { string_value: one(STRING) })),
    ensemble_scheduling: one(msg('ModelEnsembling', {
      step: many(msg('Step', {
        model_name: one(STRING),
        model_version: one(INT64),
        input_map: map(STRING, STRING),
        output_map: map(STRING, STRING),
        model_namespace: ignored(''),
      })),
      max_inflight_requests: one(UINT32),
    }), 'scheduling_choice'),
    model_warmup: many(msg('ModelWarmup', {
      name: one(STRING),
      batch_size: one(UINT32),
      inputs: map(STRING, msg('Input', {
        data_type: one(DATA_TYPE),
        dims: many(INT64),
        zero_data: one(BOOL, 'input_data_type'),
        random_data: one(BOOL, 'input_data_type'),
        input_data_file: one(STRING, 'input_data_type'),
      })),
      count: one(UINT32),
    })),
    backend: one(STRING),
    model_operations: ignored(),
    model_transaction_policy: one(msg('ModelTransactionPolicy', { decoupled: one(BOOL) })),
    batch_input: ignored([]),
    batch_output: ignored([]),
    model_repository_agents: ignored(),
    response_cache: one(msg('ModelResponseCache', { enable: one(BOOL) })),
    runtime: ignored(''),
    model_metrics: ignored(),
  },
};

// ---------------------------------------------------------------------------------------------
// Decoding: tree → typed values, with protobuf's rules on repetition, oneofs and integer ranges.

const INT_RANGES: Readonly<Record<IntKind, readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

type Decoded = Record<string, unknown>;
/** Keyed by field name, and by `oneof <name>` for the member of a oneof already written. */
type WrittenFields = Map<string, { name: string; at: PbtxtPosition }>;

class ConfigDecoder {
  readonly warnings: string[] = [];

  constructor(private readonly file: string) {}

  decodeMessage(schema: MessageSchema, message: PbtxtMessage): Decoded {
    const values = new Map<string, unknown>();
    const setOnce: WrittenFields = new Map();
    for (const field of message.fields) {
      const spec = this.specOf(schema, field);
      if (spec?.label === 'single') {
        this.checkSetOnce(schema, spec, field, setOnce);
        values.set(field.name, this.decodeValue(spec.type, field.value, field.name));
      } else if (spec?.label === 'repeated') {
        const previous = (values.get(field.name) as unknown[] | undefined) ?? [];
        values.set(field.name, [...previous, ...itemsOf(field.value).map((item) => this.decodeValue(spec.type, item, field.name))]);
      } else if (spec?.label === 'map') {
        const previous = (values.get(field.name) as Decoded | undefined) ?? {};
        values.set(field.name, this.decodeMapEntries(spec, itemsOf(field.value), field.name, previous));
      }
    }

    const decoded: Decoded = {};
    for (const [name, spec] of Object.entries(schema.fields)) {
      if (values.has(name)) decoded[name] = values.get(name);
      else if (spec.label === 'repeated') decoded[name] = [];
      else if (spec.label === 'map') decoded[name] = {};
      else if (spec.label === 'single' && spec.type.kind !== 'message' && !spec.oneof) decoded[name] = scalarDefault(spec.type);
    }
    return decoded;
  }

  /** The field's spec, or undefined (with a warning) for a field serve-fn does not read. */
  private specOf(schema: MessageSchema, field: PbtxtField): FieldSpec | undefined {
    const spec = Object.hasOwn(schema.fields, field.name) ? schema.fields[field.name]! : undefined;
    if (spec === undefined) this.warn(field, `unknown field '${field.name}' in ${schema.name} is ignored`);
    else if (spec.label === 'ignored') this.warn(field, `field '${field.name}' in ${schema.name} is not used by serve-fn and is ignored`);
    return spec;
  }

  /** A non-repeated field may be written once, and only one member of a oneof may be written. */
  private checkSetOnce(schema: MessageSchema, spec: FieldSpec, field: PbtxtField, setOnce: WrittenFields): void {
    const first = setOnce.get(field.name);
    if (first) {
      this.fail(field, `field '${field.name}' is not repeated but is set again (first set at line ${first.at.line}, column ${first.at.column})`);
    }
    const other = spec.oneof === undefined ? undefined : setOnce.get(`oneof ${spec.oneof}`);
    if (other) {
      const where = `line ${other.at.line}, column ${other.at.column}`;
      this.fail(field, `field '${field.name}' cannot be set together with '${other.name}' (${where}): they are alternatives in ${schema.name}`);
    }
    setOnce.set(field.name, { name: field.name, at: field });
    if (spec.oneof !== undefined) setOnce.set(`oneof ${spec.oneof}`, { name: field.name, at: field });
    if (field.value.kind === 'list') this.fail(field.value, `field '${field.name}' is not repeated and cannot take a list`);
  }

  private decodeMapEntries(spec: FieldSpec, entries: readonly PbtxtValue[], fieldName: string, into: Decoded): Decoded {
    const entrySchema: MessageSchema = { name: `${fieldName} entry`, fields: { key: one(spec.mapKey!), value: one(spec.type) } };
    for (const entry of entries) {
      if (entry.kind !== 'message') {
        this.fail(entry, `map field '${fieldName}' expects entries like { key: ... value: ... }, found ${describeValue(entry)}`);
      }
      const { key, value } = this.decodeMessage(entrySchema, entry);
      const emptyValue: PbtxtMessage = { kind: 'message', fields: [], line: entry.line, column: entry.column };
      // defineProperty, not assignment: a key named `__proto__` must stay an ordinary entry.
      Object.defineProperty(into, String(key), {
        value: value ?? this.decodeValue(spec.type, emptyValue, fieldName),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return into;
  }

  private decodeValue(type: FieldType, value: PbtxtValue, fieldName: string): unknown {
    if (type.kind === 'message') {
      if (value.kind !== 'message') this.fail(value, `field '${fieldName}' expects a message { ... }, found ${describeValue(value)}`);
      return this.decodeMessage(type.schema, value);
    }
    if (value.kind !== 'message' && value.kind !== 'list') return this.decodeScalar(type, value, fieldName);
    return this.fail(value, `field '${fieldName}' expects ${expected(type)}, found ${describeValue(value)}`);
  }

  private decodeScalar(type: ScalarType, value: PbtxtScalar, fieldName: string): unknown {
    const mismatch = (): never => this.fail(value, `field '${fieldName}' expects ${expected(type)}, found ${describeValue(value)}`);
    switch (type.kind) {
      case 'string':
        return value.kind === 'string' ? value.text : mismatch();
      case 'bool':
        if (value.kind === 'identifier' && ['true', 'True', 't'].includes(value.text)) return true;
        if (value.kind === 'identifier' && ['false', 'False', 'f'].includes(value.text)) return false;
        return value.kind === 'integer' && (value.text === '0' || value.text === '1') ? value.text === '1' : mismatch();
      case 'float':
        return value.kind === 'integer' || value.kind === 'float' ? parseFloatLiteral(value.text) : (parseNonFinite(value) ?? mismatch());
      case 'enum': {
        if (value.kind === 'identifier' && type.values.includes(value.text)) return value.text;
        return (value.kind === 'integer' && type.values[Number(parseIntegerLiteral(value.text))]) || mismatch();
      }
      default:
        return value.kind === 'integer' ? this.checkInteger(type.kind, parseIntegerLiteral(value.text), value, fieldName) : mismatch();
    }
  }

  /** Out of the proto type's range is an error; beyond 2^53 - 1 is held as the nearest safe integer. */
  private checkInteger(kind: IntKind, n: bigint, at: PbtxtScalar, fieldName: string): number {
    const [min, max] = INT_RANGES[kind];
    if (n < min || n > max) this.fail(at, `value ${at.text} is out of range for field '${fieldName}' (${kind})`);
    if (n > MAX_SAFE || n < -MAX_SAFE) {
      const held = n > 0n ? Number.MAX_SAFE_INTEGER : -Number.MAX_SAFE_INTEGER;
      this.warn(at, `value ${at.text} of field '${fieldName}' is beyond what serve-fn holds exactly and is read as ${held}`);
      return held;
    }
    return Number(n);
  }

  private warn(at: PbtxtPosition, what: string): void {
    this.warnings.push(`${this.file}:${at.line}:${at.column}: ${what}`);
  }

  private fail(at: PbtxtPosition, what: string): never {
    throw createError('SF_ERR_CONFIG_PARSE', this.file, at.line, at.column, what);
  }
}

function itemsOf(value: PbtxtValue): readonly PbtxtValue[] {
  return value.kind === 'list' ? value.items : [value];
}

function parseIntegerLiteral(text: string): bigint {
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  const magnitude = /^0[0-7]+$/.test(body) ? BigInt(`0o${body.slice(1)}`) : BigInt(body);
  return negative ? -magnitude : magnitude;
}

function parseFloatLiteral(text: string): number {
  return /^-?0[xX]|^-?0[0-7]+$/.test(text) ? Number(parseIntegerLiteral(text)) : Number.parseFloat(text);
}

function parseNonFinite(value: PbtxtScalar): number | undefined {
  if (value.kind !== 'identifier') return undefined;
  const word = value.text.toLowerCase();
  if (word === 'inf' || word === 'infinity') return Infinity;
  if (word === '-inf' || word === '-infinity') return -Infinity;
  return word === 'nan' || word === '-nan' ? NaN : undefined;
}

function scalarDefault(type: ScalarType): unknown {
  switch (type.kind) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'enum':
      return type.values[0];
    default:
      return 0;
  }
}

function expected(type: ScalarType): string {
  switch (type.kind) {
    case 'string':
      return 'a quoted string';
    case 'bool':
      return 'true or false';
    case 'float':
      return 'a number';
    case 'enum':
      return `a ${type.name} value (${type.values.join(', ')})`;
    default:
      return `an integer (${type.kind})`;
  }
}

function describeValue(value: PbtxtValue): string {
  switch (value.kind) {
    case 'message':
      return 'a message';
    case 'list':
      return 'a list';
    case 'string':
      return `string ${JSON.stringify(value.text)}`;
    case 'identifier':
      return `'${value.text}'`;
    default:
      return `number ${value.text}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Triton's defaults (see buildModelConfig) and JSON printing.

const BACKENDS_WITH_TWO_CPU_INSTANCES = new Set(['onnxruntime', 'tensorflow']);
const PLATFORM_BACKENDS: Readonly<Record<string, string>> = {
  onnxruntime_onnx: 'onnxruntime',
  tensorflow_graphdef: 'tensorflow',
  tensorflow_savedmodel: 'tensorflow',
};

function applyTritonDefaults(config: ModelConfig, modelName: string): void {
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

function messageToJson(schema: MessageSchema, value: Decoded): Record<string, unknown> {
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
