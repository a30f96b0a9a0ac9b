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
/**
 * Triton's kinds (model_config.proto's InstanceGroup.Kind) and serve-fn's `KIND_NPU`: Triton has no
 * NPU kind, so a group on Ascend NPUs (ids in `gpus`) says so with its own (model-source.ts, instance-placement.ts).
 */
export const INSTANCE_KINDS = ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL', 'KIND_NPU'] as const;
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
