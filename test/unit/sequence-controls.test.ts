import { describe, expect, it } from 'vitest';
import { controlInputSpecs, controlTensors, type SequenceControlInput } from '../../src/engine/sequence-controls.js';
import type { SequenceRoute } from '../../src/engine/sequence-registry.js';
import { thrown } from '../helpers/thrown.js';

const route = (correlationId: number | string, start: boolean, end: boolean): SequenceRoute => ({ lane: 0, key: 'k', correlationId, start, end, done: () => undefined });

const CONTROLS: SequenceControlInput[] = [
  { name: 'S', kind: 'CONTROL_SEQUENCE_START', datatype: 'FP32', falseTrue: [0, 1] },
  { name: 'E', kind: 'CONTROL_SEQUENCE_END', datatype: 'INT32', falseTrue: [5, 7] },
  { name: 'R', kind: 'CONTROL_SEQUENCE_READY', datatype: 'BOOL', falseTrue: [false, true] },
];

const view = (tensors: ReturnType<typeof controlTensors>) => tensors.map((t) => [t.name, t.datatype, t.shape, Array.from(t.data as ArrayLike<number>)]);

describe('sequence control inputs', () => {
  it('sets START on the first request, END on the last, READY on every one, with the configured values', () => {
    expect(view(controlTensors(CONTROLS, route(1, true, false), false, 'm'))).toEqual([['S', 'FP32', [1], [1]], ['E', 'INT32', [1], [5]], ['R', 'BOOL', [1], [1]]]);
    expect(view(controlTensors(CONTROLS, route(1, false, false), true, 'm'))).toEqual([['S', 'FP32', [1, 1], [0]], ['E', 'INT32', [1, 1], [5]], ['R', 'BOOL', [1, 1], [1]]]);
    expect(view(controlTensors(CONTROLS, route(1, true, true), false, 'm'))).toEqual([['S', 'FP32', [1], [1]], ['E', 'INT32', [1], [7]], ['R', 'BOOL', [1], [1]]]);
  });

  it('gives CORRID the correlation id in its datatype, a string id only to a TYPE_STRING CORRID', () => {
    const corrid = (datatype: 'UINT32' | 'BYTES' | 'INT64'): SequenceControlInput[] => [{ name: 'C', kind: 'CONTROL_SEQUENCE_CORRID', datatype }];
    expect(controlTensors(corrid('UINT32'), route(42, false, false), false, 'm')[0]).toEqual({ name: 'C', datatype: 'UINT32', shape: [1], data: Uint32Array.from([42]) });
    expect(controlTensors(corrid('INT64'), route(42, false, false), false, 'm')[0].data).toEqual(BigInt64Array.from([42n]));
    expect(controlTensors(corrid('BYTES'), route('user-1', false, false), false, 'm')[0].data).toEqual([new TextEncoder().encode('user-1')]);
    const tooBig = thrown(() => controlTensors(corrid('UINT32'), route(2 ** 40, false, false), false, 'm'));
    expect([tooBig.code, tooBig.statusCode]).toEqual(['SF_ERR_BAD_REQUEST', 400]);
    expect(tooBig.message).toMatch(/^sequence_id 1099511627776 does not fit control input 'C' of model 'm' \(UINT32\): /);
  });

  it('describes each control input to the instance as a one-element input', () => {
    expect(controlInputSpecs(CONTROLS.slice(0, 1))).toEqual([{ name: 'S', datatype: 'FP32', dims: [1], optional: false }]);
  });
});
