import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { fromOrtTensor, toOrtTensor } from '../../src/tensor/ort-codec.js';
import { createTensor, type TensorValue } from '../../src/tensor/tensor-factory.js';
import type { Datatype } from '../../src/spec/tensor.js';
import { thrown } from '../helpers/thrown.js';

const CASES: readonly [Datatype, string, TensorValue[]][] = [
  ['BOOL', 'bool', [true, false, false, true]],
  ['UINT8', 'uint8', [0, 1, 2, 255]],
  ['UINT16', 'uint16', [0, 1, 2, 65535]],
  ['UINT32', 'uint32', [0, 1, 2, 4294967295]],
  ['UINT64', 'uint64', [0n, 1n, 2n, 2n ** 64n - 1n]],
  ['INT8', 'int8', [-128, 0, 1, 127]],
  ['INT16', 'int16', [-32768, 0, 1, 32767]],
  ['INT32', 'int32', [-2147483648, 0, 1, 2147483647]],
  ['INT64', 'int64', [-(2n ** 63n), 0n, 1n, 2n ** 63n - 1n]],
  ['FP16', 'float16', [1, -2, 65504, 0.5]],
  ['FP32', 'float32', [1.5, -2, 0, 3]],
  ['FP64', 'float64', [0.1, -2, 0, 3]],
  ['BYTES', 'string', ['', 'a', 'héllo', '日本語🙂']],
];

describe('serve-fn Tensor ↔ ORT Tensor', () => {
  it.each(CASES)('%s ↔ %s', (datatype, ortType, values) => {
    const tensor = createTensor('T', datatype, [2, 2], values);
    const ortTensor = toOrtTensor(tensor, ort.Tensor);
    expect(ortTensor.type).toBe(ortType);
    expect(ortTensor.dims).toEqual([2, 2]);
    expect(fromOrtTensor('T', ortTensor)).toEqual(tensor);
  });

  it('hands numeric data to ORT without copying', () => {
    const tensor = createTensor('x', 'FP32', [3], new Float32Array([1, 2, 3]));
    expect(toOrtTensor(tensor, ort.Tensor).data).toBe(tensor.data);
  });

  it('hands BYTES to ORT as strings', () => {
    const ortTensor = toOrtTensor(createTensor('s', 'BYTES', [2], ['', 'ü']), ort.Tensor);
    expect(ortTensor.data).toEqual(['', 'ü']);
  });

  it('refuses BF16 and BYTES that are not UTF-8', () => {
    const bf16 = thrown(() => toOrtTensor(createTensor('h', 'BF16', [1], [1]), ort.Tensor));
    expect(bf16.code).toBe('SF_ERR_TENSOR_DATA');
    expect(bf16.message).toBe("Tensor 'h': datatype BF16 is not supported by ONNX Runtime for Node.js (it has no bfloat16 tensors); convert it to FP32 or FP16.");
    const bytes = thrown(() => toOrtTensor(createTensor('s', 'BYTES', [1], [new Uint8Array([0xc3])]), ort.Tensor));
    expect(bytes.message).toBe("Tensor 's': element 0 is not valid UTF-8, and ONNX Runtime string tensors hold text only.");
  });

  it('keeps FP16 as raw bits when ORT returns another 16-bit array (Float16Array on newer engines)', () => {
    const fake = { type: 'float16', dims: [2], data: new Int16Array([0x3c00, -0x4000]) } as unknown as ort.Tensor;
    expect(fromOrtTensor('h', fake)).toEqual({ name: 'h', datatype: 'FP16', shape: [2], data: new Uint16Array([0x3c00, 0xc000]) });
  });

  it('refuses ORT types with no KServe datatype', () => {
    const int4 = new ort.Tensor('int4', new Uint8Array([0x21]), [2]);
    expect(thrown(() => fromOrtTensor('q', int4)).message).toBe("Tensor 'q': ONNX Runtime type 'int4' has no KServe v2 datatype.");
  });
});
