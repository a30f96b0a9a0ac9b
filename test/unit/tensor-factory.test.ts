import { describe, expect, it } from 'vitest';
import {
  checkTensorAgainstSpec,
  createTensor,
  elementCount,
  formatShape,
  shapeMatches,
  shapesCompatible,
  validateShape,
  withBatchDim,
} from '../../src/tensor/tensor-factory.js';
import type { TensorSpec } from '../../src/spec/tensor.js';
import { thrown } from '../helpers/thrown.js';

describe('shapes', () => {
  it('counts elements', () => {
    expect(elementCount([])).toBe(1);
    expect(elementCount([2, 3, 4])).toBe(24);
    expect(elementCount([0, 5])).toBe(0);
  });

  it('matches shapes with -1 wildcards', () => {
    expect(shapeMatches([-1, 16], [3, 16])).toBe(true);
    expect(shapeMatches([-1, -1], [0, 7])).toBe(true);
    expect(shapeMatches([-1, 16], [3, 15])).toBe(false);
    expect(shapeMatches([-1, 16], [3, 16, 1])).toBe(false);
    expect(shapeMatches([], [])).toBe(true);
    expect(shapeMatches([4], [-1])).toBe(false);
  });

  it('calls two declared shapes compatible when every dimension agrees or either side is -1', () => {
    expect(shapesCompatible([-1, 16], [3, -1])).toBe(true);
    expect(shapesCompatible([3, -1], [-1, 16])).toBe(true);
    expect(shapesCompatible([4, 16], [3, 16])).toBe(false);
    expect(shapesCompatible([-1], [-1, 16])).toBe(false);
    expect(shapesCompatible([], [])).toBe(true);
  });

  it('puts the batch dimension in front only for a model that batches', () => {
    expect(withBatchDim([3, 4], 8)).toEqual([-1, 3, 4]);
    expect(withBatchDim([3, 4], 0)).toEqual([3, 4]);
  });

  it('formats shapes as Triton does', () => {
    expect(formatShape([-1, 16])).toBe('[-1,16]');
    expect(formatShape([])).toBe('[]');
  });

  it('refuses request shapes with unknown or invalid dimensions', () => {
    expect(validateShape('x', [2, 0])).toEqual([2, 0]);
    for (const bad of [[-1, 2], [1.5], ['2'], 'nope', undefined]) {
      const err = thrown(() => validateShape('x', bad));
      expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    }
    expect(thrown(() => validateShape('IN', [2, -1])).message).toBe(
      "Tensor 'IN': shape must be a list of non-negative integers, got [2,-1].",
    );
  });
});

describe('checkTensorAgainstSpec', () => {
  const spec: TensorSpec = { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] };

  it('accepts a tensor within the spec', () => {
    expect(() => checkTensorAgainstSpec(createTensor('INPUT0', 'INT32', [2, 16], new Int32Array(32)), spec)).not.toThrow();
  });

  it('names the tensor, the expected and the received shape', () => {
    const err = thrown(() => checkTensorAgainstSpec(createTensor('INPUT0', 'INT32', [2, 15], new Int32Array(30)), spec));
    expect(err.code).toBe('SF_ERR_TENSOR_SHAPE');
    expect(err.statusCode).toBe(400);
    expect(err.message).toBe("Tensor 'INPUT0': expected shape [-1,16], got [2,15].");
  });

  it('names the tensor, the expected and the received datatype', () => {
    const err = thrown(() => checkTensorAgainstSpec(createTensor('INPUT0', 'FP32', [1, 16], new Float32Array(16)), spec));
    expect(err.code).toBe('SF_ERR_TENSOR_DATATYPE');
    expect(err.message).toBe("Tensor 'INPUT0': expected datatype INT32, got FP32.");
  });
});

describe('createTensor', () => {
  it('keeps typed-array data of the right kind without copying', () => {
    const data = new Float32Array([1, 2, 3, 4, 5, 6]);
    const tensor = createTensor('x', 'FP32', [2, 3], data);
    expect(tensor).toEqual({ name: 'x', datatype: 'FP32', shape: [2, 3], data });
    expect(tensor.data).toBe(data);
  });

  it('converts plain values for every datatype', () => {
    expect(createTensor('b', 'BOOL', [3], [true, false, true]).data).toEqual(new Uint8Array([1, 0, 1]));
    expect(createTensor('u8', 'UINT8', [2], [0, 255]).data).toEqual(new Uint8Array([0, 255]));
    expect(createTensor('u16', 'UINT16', [1], [65535]).data).toEqual(new Uint16Array([65535]));
    expect(createTensor('u32', 'UINT32', [1], [4294967295]).data).toEqual(new Uint32Array([4294967295]));
    expect(createTensor('i8', 'INT8', [2], [-128, 127]).data).toEqual(new Int8Array([-128, 127]));
    expect(createTensor('i16', 'INT16', [2], [-32768, 32767]).data).toEqual(new Int16Array([-32768, 32767]));
    expect(createTensor('i32', 'INT32', [2], [-2147483648, 2147483647]).data).toEqual(new Int32Array([-2147483648, 2147483647]));
    expect(createTensor('f16', 'FP16', [2], [1, -2]).data).toEqual(new Uint16Array([0x3c00, 0xc000]));
    expect(createTensor('bf16', 'BF16', [2], [1, -2]).data).toEqual(new Uint16Array([0x3f80, 0xc000]));
    expect(createTensor('f32', 'FP32', [1], [0.5]).data).toEqual(new Float32Array([0.5]));
    expect(createTensor('f64', 'FP64', [1], [0.1]).data).toEqual(new Float64Array([0.1]));
    const bytes = new Uint8Array([0xff]);
    const t = createTensor('s', 'BYTES', [3], ['', 'é', bytes]);
    expect(t.data).toEqual([new Uint8Array([]), new Uint8Array([0xc3, 0xa9]), bytes]);
    expect((t.data as Uint8Array[])[2]).toBe(bytes);
  });

  it('reads INT64 and UINT64 extremes from bigints, safe numbers and decimal strings', () => {
    const int64 = createTensor('i64', 'INT64', [4], ['-9223372036854775808', 9223372036854775807n, -5, '0']);
    expect(int64.data).toEqual(new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n, -5n, 0n]));
    const uint64 = createTensor('u64', 'UINT64', [2], ['18446744073709551615', Number.MAX_SAFE_INTEGER]);
    expect(uint64.data).toEqual(new BigUint64Array([2n ** 64n - 1n, 9007199254740991n]));
  });

  it.each([
    ['INT8', [128], "Tensor 't': element 0 is 128: out of range for INT8 [-128, 127]."],
    ['UINT8', [1, -1], "Tensor 't': element 1 is -1: out of range for UINT8 [0, 255]."],
    ['UINT32', [4294967296], "Tensor 't': element 0 is 4294967296: out of range for UINT32 [0, 4294967295]."],
    ['INT32', [1.5], "Tensor 't': element 0 is 1.5: expected an integer."],
    ['INT16', ['3'], "Tensor 't': element 0 is \"3\": expected an integer."],
    ['INT64', ['9223372036854775808'], "Tensor 't': element 0 is \"9223372036854775808\": out of range for INT64 [-9223372036854775808, 9223372036854775807]."],
    ['UINT64', [-1n], "Tensor 't': element 0 is -1: out of range for UINT64 [0, 18446744073709551615]."],
    ['INT64', [2 ** 53], "Tensor 't': element 0 is 9007199254740992: beyond ±(2^53-1), where JSON numbers lose precision; send it as a string."],
    ['INT64', ['1e3'], "Tensor 't': element 0 is \"1e3\": expected an integer, a bigint or a decimal string."],
    ['BOOL', [1], "Tensor 't': element 0 is 1: expected true or false."],
    ['FP32', [null], "Tensor 't': element 0 is null: expected a number."],
    ['FP16', ['1'], "Tensor 't': element 0 is \"1\": expected a number."],
    ['BYTES', [7], "Tensor 't': element 0 is 7: expected a string or bytes."],
  ] as const)('refuses a %s value that does not fit: %s', (datatype, values, message) => {
    const err = thrown(() => createTensor('t', datatype, [values.length], values as never));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    expect(err.message).toBe(message);
  });

  it('refuses an element count that does not match the shape', () => {
    const err = thrown(() => createTensor('INPUT0', 'INT32', [2, 3], [1, 2, 3, 4, 5]));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    expect(err.message).toBe("Tensor 'INPUT0': shape [2,3] needs 6 elements, got 5.");
    expect(thrown(() => createTensor('x', 'FP32', [4], new Float32Array(3))).message).toBe(
      "Tensor 'x': shape [4] needs 4 elements, got 3.",
    );
  });

  it('refuses typed arrays of the wrong kind and BOOL bytes other than 0 and 1', () => {
    expect(thrown(() => createTensor('x', 'INT32', [2], new Float32Array(2))).message).toBe(
      "Tensor 'x': INT32 data must be an Int32Array, got a Float32Array.",
    );
    expect(thrown(() => createTensor('x', 'BYTES', [2], new Uint8Array(2))).message).toBe(
      "Tensor 'x': BYTES data must be an array of Uint8Array or string elements, got a Uint8Array.",
    );
    expect(thrown(() => createTensor('flags', 'BOOL', [3], new Uint8Array([0, 1, 2]))).message).toBe(
      "Tensor 'flags': element 2 is 2: BOOL elements must be 0 or 1.",
    );
  });
});
