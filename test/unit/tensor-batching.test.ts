import { describe, expect, it } from 'vitest';
import { batchSignature, concatBatch, reshapeTensor, splitBatch } from '../../src/tensor/tensor-batching.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';

const utf8 = new TextEncoder();

describe('concatBatch', () => {
  it('joins numeric tensors along dimension 0 under the new name', () => {
    const a = createTensor('a', 'INT32', [1, 3], [1, 2, 3]);
    const b = createTensor('b', 'INT32', [2, 3], [4, 5, 6, 7, 8, 9]);
    const joined = concatBatch('X', [a, b]);
    expect(joined.name).toBe('X');
    expect(joined.shape).toEqual([3, 3]);
    expect(joined.data).toEqual(Int32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9]));
  });

  it('joins INT64 and BYTES tensors', () => {
    const big = concatBatch('I', [createTensor('I', 'INT64', [1], [1n]), createTensor('I', 'INT64', [1], [-2n])]);
    expect(big.data).toEqual(BigInt64Array.from([1n, -2n]));
    const bytes = concatBatch('S', [createTensor('S', 'BYTES', [1, 1], ['a']), createTensor('S', 'BYTES', [1, 1], ['bc'])]);
    expect(bytes.shape).toEqual([2, 1]);
    expect(bytes.data).toEqual([utf8.encode('a'), utf8.encode('bc')]);
  });

  it('returns a single part as is', () => {
    const only = createTensor('a', 'FP32', [2], [1, 2]);
    expect(concatBatch('a', [only])).toBe(only);
  });
});

describe('splitBatch', () => {
  it('cuts rows into pieces that own their buffers', () => {
    const t = createTensor('OUT', 'FP32', [3, 2], [1, 2, 3, 4, 5, 6]);
    const [first, second] = splitBatch(t, [1, 2]);
    expect(first.shape).toEqual([1, 2]);
    expect(first.data).toEqual(Float32Array.from([1, 2]));
    expect(second.shape).toEqual([2, 2]);
    expect(second.data).toEqual(Float32Array.from([3, 4, 5, 6]));
    expect((second.data as Float32Array).byteOffset).toBe(0);
    expect((second.data as Float32Array).buffer.byteLength).toBe(16);
  });

  it('splits BYTES tensors', () => {
    const t = createTensor('S', 'BYTES', [2], ['x', 'yz']);
    expect(splitBatch(t, [1, 1]).map((p) => p.data)).toEqual([[utf8.encode('x')], [utf8.encode('yz')]]);
  });

  it('refuses an output whose first dimension is not the batch', () => {
    const t = createTensor('OUT', 'FP32', [2, 2], [1, 2, 3, 4]);
    expect(() => splitBatch(t, [1, 2])).toThrow("Backend 'batching' failed to run 'OUT': output shape [2,2] does not start with the batch size 3 of its requests");
  });
});

describe('reshapeTensor', () => {
  it('keeps the data and fills in one -1', () => {
    const t = createTensor('x', 'INT8', [2, 3], [1, 2, 3, 4, 5, 6]);
    expect(reshapeTensor(t, [3, 2]).shape).toEqual([3, 2]);
    expect(reshapeTensor(t, [-1, 2]).shape).toEqual([3, 2]);
    expect(reshapeTensor(t, [6]).data).toBe(t.data);
  });

  it('refuses a shape of another size', () => {
    const t = createTensor('x', 'INT8', [2, 3], [1, 2, 3, 4, 5, 6]);
    expect(() => reshapeTensor(t, [4])).toThrow("Tensor 'x': expected shape [4], got [2,3].");
    expect(() => reshapeTensor(t, [-1, -1])).toThrow('expected shape [-1,-1]');
  });
});

describe('batchSignature', () => {
  it('ignores dimension 0 and input order, not the other dimensions', () => {
    const x = (rows: number, width: number) => createTensor('x', 'FP32', [rows, width], new Float32Array(rows * width));
    const y = createTensor('y', 'FP32', [1, 1], [0]);
    expect(batchSignature([x(1, 4), y])).toBe(batchSignature([y, x(5, 4)]));
    expect(batchSignature([x(1, 4), y])).not.toBe(batchSignature([x(1, 5), y]));
    expect(batchSignature([x(1, 4)])).not.toBe(batchSignature([x(1, 4), y]));
  });
});
