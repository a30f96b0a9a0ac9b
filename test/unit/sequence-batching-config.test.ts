import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../src/model-repository/model-config.js';
import { sequenceBatchingPlan } from '../../src/model-repository/sequence-batching-config.js';
import { thrown } from '../helpers/thrown.js';

const TENSORS = `
name: "seq"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

const plan = (sequenceBatching: string) => sequenceBatchingPlan(parseModelConfig(`${TENSORS}\n${sequenceBatching}`, 'config.pbtxt', 'seq').config);

describe('sequenceBatchingPlan', () => {
  it("reads Triton's simple_sequence controls and the 1 s idle default", () => {
    expect(plan(`sequence_batching {
      control_input [
        { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "READY" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] },
        { name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] },
        { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } ] }
      ]
    }`)).toEqual({
      idleUs: 1_000_000,
      controls: [
        { name: 'START', kind: 'CONTROL_SEQUENCE_START', datatype: 'INT32', falseTrue: [0, 1] },
        { name: 'READY', kind: 'CONTROL_SEQUENCE_READY', datatype: 'FP32', falseTrue: [0, 1] },
        { name: 'END', kind: 'CONTROL_SEQUENCE_END', datatype: 'BOOL', falseTrue: [false, true] },
        { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', datatype: 'BYTES' },
      ],
    });
  });

  it('keeps max_sequence_idle_microseconds, and is undefined without sequence_batching', () => {
    expect(plan('sequence_batching { max_sequence_idle_microseconds: 250000 }')).toEqual({ idleUs: 250_000, controls: [] });
    expect(plan('')).toBeUndefined();
  });

  it("reads the direct strategy's wait, and refuses a slot utilization outside 0–1", () => {
    expect(plan('sequence_batching { direct { max_queue_delay_microseconds: 2000 minimum_slot_utilization: 1.0 } }')).toEqual({ idleUs: 1_000_000, controls: [], direct: { maxQueueDelayUs: 2000, minimumSlotUtilization: 1 } });
    expect(thrown(() => plan('sequence_batching { direct { minimum_slot_utilization: 1.5 } }')).message).toMatch(/direct\.minimum_slot_utilization must be between 0 and 1 \(got 1\.5\)/);
  });

  it('refuses controls Triton refuses, naming the field', () => {
    const why = (text: string): string => thrown(() => plan(text)).message.replace("Model configuration for 'seq' is invalid: sequence_batching: ", '');
    expect(why('sequence_batching { control_input [ { name: "S" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0 ] } ] } ] }'))
      .toBe("CONTROL_SEQUENCE_START 'S': int32_false_true must hold two values, false then true (got 1)");
    expect(why('sequence_batching { control_input [ { name: "S" control [ { kind: CONTROL_SEQUENCE_START } ] } ] }'))
      .toBe("CONTROL_SEQUENCE_START 'S' must give exactly one of int32_false_true, fp32_false_true and bool_false_true");
    expect(why('sequence_batching { control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] } ] }'))
      .toBe("CONTROL_SEQUENCE_CORRID 'C' needs data_type TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING (got TYPE_FP32)");
    expect(why(`sequence_batching { control_input [
      { name: "A" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] },
      { name: "B" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] } ] }`)).toBe('CONTROL_SEQUENCE_READY is given more than once');
    expect(why('sequence_batching { control_input [ { name: "INPUT" control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ] } ] }'))
      .toBe("control_input 'INPUT' is also a model input; the server fills control inputs, so leave it out of input [...]");
    expect(why('sequence_batching { state [ { input_name: "IN_STATE" output_name: "OUT_STATE" data_type: TYPE_INT32 dims: [ 1 ] } ] }'))
      .toBe('implicit state (state [...]) is not supported; keep the state in a model.ts instance, keyed by request.correlationId');
  });
});
