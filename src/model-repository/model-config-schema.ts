import { CONFIG_DATA_TYPES, CONTROL_KINDS, INPUT_FORMATS, INSTANCE_KINDS, TIMEOUT_ACTIONS } from '../spec/model-config-types.js';

/** Schema of the ModelConfig proto messages serve-fn reads, fields in field-number order. */
export type IntKind = 'int32' | 'uint32' | 'int64' | 'uint64';
export type ScalarType =
  | { readonly kind: 'string' | 'bool' | 'float' }
  /** `min`: the least value Triton's ValidateModelConfig (core/src/model_config_utils.cc) accepts, beyond the proto type's range. */
  | { readonly kind: IntKind; readonly jsonAsString?: boolean; readonly min?: number }
  | { readonly kind: 'enum'; readonly name: string; readonly values: readonly string[] };
export type FieldType = ScalarType | { readonly kind: 'message'; readonly schema: MessageSchema };

export interface FieldSpec {
  readonly label: 'single' | 'repeated' | 'map' | 'ignored';
  readonly type: FieldType;
  readonly mapKey?: ScalarType;
  readonly oneof?: string;
  /** For ignored primitive fields: what Triton prints when the field is unset. */
  readonly json?: unknown;
}

export interface MessageSchema {
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
/** Triton: "'max_batch_size' must be non-negative value"; 0 means the model does not batch. */
const BATCH_SIZE: ScalarType = { kind: 'int32', min: 0 };
const DATA_TYPE: ScalarType = { kind: 'enum', name: 'DataType', values: CONFIG_DATA_TYPES };

export const one = (type: FieldType, oneof?: string): FieldSpec => ({ label: 'single', type, oneof });
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

export const MODEL_CONFIG: MessageSchema = {
  name: 'ModelConfig',
  fields: {
    name: one(STRING),
    platform: one(STRING),
    version_policy: one(msg('ModelVersionPolicy', {
      latest: one(msg('Latest', { num_versions: one(UINT32) }), 'policy_choice'),
      all: one(msg('All', {}), 'policy_choice'),
      specific: one(msg('Specific', { versions: many(INT64) }), 'policy_choice'),
    })),
    max_batch_size: one(BATCH_SIZE),
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
