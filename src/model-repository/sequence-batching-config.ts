import { createError, type ServeFnError } from '../errors/index.js';
import type { SequenceControlInput } from '../engine/sequence-controls.js';
import { fromConfigDatatype } from '../tensor/datatype-info.js';
import type { ModelConfig, SequenceControl } from './model-config.js';

/** What the sequence scheduler of a stateful model takes from its `sequence_batching`. */
export interface SequenceBatchingPlan {
  /** `max_sequence_idle_microseconds` (1,000,000 when not written). */
  readonly idleUs: number;
  readonly controls: readonly SequenceControlInput[];
  /** The direct strategy's wait for a share of an instance's sequences (SequenceSchedulerOptions.direct). */
  readonly direct?: { readonly maxQueueDelayUs: number; readonly minimumSlotUtilization: number };
}

const CORRID_TYPES = ['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING'];

/**
 * Reads and checks `sequence_batching` as Triton's sequence batcher does when the model loads:
 * each control input holds one control, each control kind appears at most once, START / END /
 * READY give exactly one `*_false_true` pair of two values, and CORRID an integer or string type.
 * Undefined for a model without sequence_batching.
 */
export function sequenceBatchingPlan(config: ModelConfig): SequenceBatchingPlan | undefined {
  const batching = config.sequence_batching;
  if (!batching) return undefined;
  const invalid = (why: string): ServeFnError => createError('SF_ERR_CONFIG_INVALID', config.name, `sequence_batching: ${why}`);
  if (batching.state.length > 0) {
    throw invalid('implicit state (state [...]) is not supported; keep the state in a model.ts instance, keyed by request.correlationId');
  }
  const controls: SequenceControlInput[] = [];
  for (const input of batching.control_input) {
    if (input.name === '') throw invalid('a control_input has no name');
    if (input.control.length !== 1) throw invalid(`control_input '${input.name}' must hold exactly one control, it holds ${input.control.length}`);
    if (config.input.some((i) => i.name === input.name)) throw invalid(`control_input '${input.name}' is also a model input; the server fills control inputs, so leave it out of input [...]`);
    const control = readControl(input.name, input.control[0], invalid);
    if (controls.some((c) => c.kind === control.kind)) throw invalid(`${control.kind} is given more than once`);
    controls.push(control);
  }
  const direct = batching.direct;
  if (direct && !(direct.minimum_slot_utilization >= 0 && direct.minimum_slot_utilization <= 1)) throw invalid(`direct.minimum_slot_utilization must be between 0 and 1 (got ${direct.minimum_slot_utilization})`);
  return { idleUs: batching.max_sequence_idle_microseconds, controls, ...(direct ? { direct: { maxQueueDelayUs: direct.max_queue_delay_microseconds, minimumSlotUtilization: direct.minimum_slot_utilization } } : {}) };
}

function readControl(name: string, control: SequenceControl, invalid: (why: string) => ServeFnError): SequenceControlInput {
  const { kind } = control;
  if (kind === 'CONTROL_SEQUENCE_CORRID') {
    if (!CORRID_TYPES.includes(control.data_type)) {
      throw invalid(`CONTROL_SEQUENCE_CORRID '${name}' needs data_type TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING (got ${control.data_type})`);
    }
    return { name, kind, datatype: fromConfigDatatype(control.data_type)! };
  }
  const pairs = [
    { field: 'int32_false_true', datatype: 'INT32', values: control.int32_false_true },
    { field: 'fp32_false_true', datatype: 'FP32', values: control.fp32_false_true },
    { field: 'bool_false_true', datatype: 'BOOL', values: control.bool_false_true },
  ] as const;
  const given = pairs.filter((p) => p.values.length > 0);
  if (given.length !== 1) throw invalid(`${kind} '${name}' must give exactly one of int32_false_true, fp32_false_true and bool_false_true`);
  const [pair] = given;
  if (pair.values.length !== 2) throw invalid(`${kind} '${name}': ${pair.field} must hold two values, false then true (got ${pair.values.length})`);
  return { name, kind, datatype: pair.datatype, falseTrue: [pair.values[0], pair.values[1]] };
}
