import { describe, expect, it } from 'vitest';
import { refuseSequenceParameters, takeSequenceParameters } from '../../src/engine/sequence-parameters.js';
import { thrown } from '../helpers/thrown.js';

describe('sequence parameters', () => {
  it('takes the sequence parameters out and leaves the others for the model', () => {
    expect(takeSequenceParameters({ sequence_id: 'a', sequence_start: true, note: 1 })).toEqual({ sequence: { id: 'a', start: true, end: false }, rest: { note: 1 } });
    expect(takeSequenceParameters({ sequence_id: 3, sequence_end: true })).toEqual({ sequence: { id: 3, start: false, end: true }, rest: {} });
    expect(takeSequenceParameters({})).toEqual({ sequence: { start: false, end: false }, rest: {} });
  });

  it('refuses parameters that ask for a sequence and lets 0, "" and false pass', () => {
    expect(refuseSequenceParameters('m', { sequence_id: 0, sequence_start: false, sequence_end: false, other: true })).toBeUndefined();
    expect(refuseSequenceParameters('m', { sequence_id: '' })).toBeUndefined();
    expect(thrown(() => refuseSequenceParameters('m', { sequence_id: 'x' })).message).toBe(
      "inference request to model 'm' sets 'sequence_id', but the model is not stateful: its configuration has no sequence_batching",
    );
    expect(thrown(() => refuseSequenceParameters('m', { sequence_start: true })).code).toBe('SF_ERR_SEQUENCE_UNSUPPORTED');
  });
});
