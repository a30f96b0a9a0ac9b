import { describe, expect, it } from 'vitest';
import type { InferenceModelInfo } from '../../src/inference/inference-model.js';
import { validateInferRequest } from '../../src/inference/request-validation.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';

const info: InferenceModelInfo = {
  name: 'simple',
  version: '1',
  platform: 'onnxruntime_onnx',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [2] },
    { name: 'MASK', datatype: 'BOOL', shape: [-1], optional: true },
  ],
  outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [2] }, { name: 'OUTPUT1', datatype: 'INT32', shape: [2] }],
  maxBatchSize: 4,
  config: {},
  decoupled: false,
};
const input0 = (rows: number) => createTensor('INPUT0', 'INT32', [rows, 2], new Int32Array(rows * 2));

describe('validateInferRequest', () => {
  it('keeps the declared order, fills in every output and counts batch rows', () => {
    const mask = createTensor('MASK', 'BOOL', [3, 5], new Uint8Array(15));
    const validated = validateInferRequest(info, { id: 'r1', inputs: [mask, input0(3)] });
    expect(validated.wire.inputs.map((t) => t.name)).toEqual(['INPUT0', 'MASK']);
    expect(validated.wire.outputs).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(validated.wire.id).toBe('r1');
    expect(validated.rows).toBe(3);
  });

  it('accepts a request without an optional input, with another signature', () => {
    const without = validateInferRequest(info, { inputs: [input0(1)] });
    const withMask = validateInferRequest(info, { inputs: [input0(1), createTensor('MASK', 'BOOL', [1, 1], [true])] });
    expect(without.signature).not.toBe(withMask.signature);
  });

  it('narrows outputs to the requested ones, once each', () => {
    const validated = validateInferRequest(info, { inputs: [input0(1)], outputs: [{ name: 'OUTPUT1' }, { name: 'OUTPUT1' }] });
    expect(validated.wire.outputs).toEqual(['OUTPUT1']);
  });

  it.each([
    ['a missing input', { inputs: [] }, 'SF_ERR_TENSOR_MISSING', "Expected input 'INPUT0' for model 'simple' is missing."],
    ['an unknown input', { inputs: [input0(1), createTensor('EXTRA', 'INT32', [1], [1])] }, 'SF_ERR_TENSOR_UNEXPECTED', "Unexpected input 'EXTRA' for model 'simple'."],
    ['a wrong datatype', { inputs: [createTensor('INPUT0', 'FP32', [1, 2], [1, 2])] }, 'SF_ERR_TENSOR_DATATYPE', "Tensor 'INPUT0': expected datatype INT32, got FP32."],
    ['a wrong shape', { inputs: [createTensor('INPUT0', 'INT32', [1, 3], [1, 2, 3])] }, 'SF_ERR_TENSOR_SHAPE', "Tensor 'INPUT0': expected shape [-1,2], got [1,3]."],
    ['an unknown output', { inputs: [input0(1)], outputs: [{ name: 'NOPE' }] }, 'SF_ERR_OUTPUT_UNKNOWN', "Unexpected inference output 'NOPE' for model 'simple'."],
    ['too large a batch', { inputs: [input0(5)] }, 'SF_ERR_BAD_REQUEST', "inference request batch-size must be <= 4 for 'simple'"],
    ['unequal batch sizes', { inputs: [input0(2), createTensor('MASK', 'BOOL', [1, 1], [true])] }, 'SF_ERR_BAD_REQUEST', "input 'MASK' batch size does not match other inputs for 'simple'"],
    ['an input given twice', { inputs: [input0(1), input0(1)] }, 'SF_ERR_TENSOR_DATA', "Tensor 'INPUT0': is given more than once."],
    ['data of the wrong length', { inputs: [{ name: 'INPUT0', datatype: 'INT32' as const, shape: [1, 2], data: new Int32Array(3) }] }, 'SF_ERR_TENSOR_DATA', "Tensor 'INPUT0': shape [1,2] needs 2 elements, got 3."],
  ])('refuses %s', (_what, request, code, message) => {
    expect(() => validateInferRequest(info, request)).toThrow(expect.objectContaining({ code, message }));
  });

  it('checks shapes without a batch dimension when the model does not batch', () => {
    const plain = { ...info, maxBatchSize: 0 };
    expect(validateInferRequest(plain, { inputs: [createTensor('INPUT0', 'INT32', [2], [1, 2])] }).rows).toBe(1);
    expect(() => validateInferRequest(plain, { inputs: [input0(1)] })).toThrow("expected shape [2], got [1,2]");
  });
});
