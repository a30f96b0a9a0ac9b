import { describe, expect, it } from 'vitest';
import type { InferenceModelInfo } from '../../src/inference/inference-model.js';
import { checkNoEmptyDims, validateInferRequest } from '../../src/inference/request-validation.js';
import type { ConfigTensor } from '../../src/spec/config-tensor.js';
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

describe('checkNoEmptyDims (a @Tensors interface)', () => {
  const image: InferenceModelInfo = {
    ...info, name: 'rec', inputs: [{ name: 'x', datatype: 'FP32', shape: [3, 48, -1] }, { name: 'MASK', datatype: 'BOOL', shape: [-1], optional: true }],
  };
  const specs = (allowEmpty: boolean): ConfigTensor[] => [
    { name: 'x', datatype: 'FP32', dims: [3, 48, -1], optional: false },
    { name: 'MASK', datatype: 'BOOL', dims: [-1], optional: true, ...(allowEmpty ? { allowEmpty } : {}) },
  ];
  const x = (shape: number[]) => createTensor('x', 'FP32', shape, new Float32Array(shape.reduce((a, b) => a * b, 1)));
  const mask = (shape: number[]) => createTensor('MASK', 'BOOL', shape, new Uint8Array(shape.reduce((a, b) => a * b, 1)));
  const check = (inputs: ReturnType<typeof x>[], model = image, allowEmpty = false) => () => checkNoEmptyDims(model, validateInferRequest(model, { inputs }), specs(allowEmpty));

  it('refuses a zero-sized dimension with 400, naming it', () => {
    expect(check([x([1, 3, 48, 0])])).toThrow(expect.objectContaining({
      code: 'SF_ERR_TENSOR_DATA', statusCode: 400, message: "Tensor 'x': shape [1,3,48,0] has an empty dimension (index 3); model 'rec' takes no empty input there.",
    }));
  });

  it('refuses a batch of 0 rows, even for an input that allows empty dimensions', () => {
    expect(check([x([0, 3, 48, 16])])).toThrow("Tensor 'x': shape [0,3,48,16] has a batch of 0 rows; model 'rec' takes no empty input there.");
    expect(check([x([0, 3, 48, 16]), mask([0, 4])], image, true)).toThrow("Tensor 'x': shape [0,3,48,16] has a batch of 0 rows");
    const maskOnly = { ...image, inputs: [image.inputs[1]] };
    expect(check([mask([0, 4])], maskOnly, true)).toThrow("Tensor 'MASK': shape [0,4] has a batch of 0 rows");
  });

  it('lets an input declared allowEmpty be empty, and passes shapes without a 0', () => {
    expect(check([x([2, 3, 48, 1]), mask([2, 0])], image, true)).not.toThrow();
    expect(check([x([2, 3, 48, 1]), mask([2, 0])])).toThrow("Tensor 'MASK': shape [2,0] has an empty dimension (index 1)");
    const unbatched = { ...image, maxBatchSize: 0, inputs: [{ name: 'x', datatype: 'FP32' as const, shape: [-1] }] };
    expect(check([x([0])], unbatched)).toThrow("Tensor 'x': shape [0] has an empty dimension (index 0)");
  });
});

