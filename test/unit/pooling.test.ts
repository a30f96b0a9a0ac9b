import { describe, expect, it } from 'vitest';
import { poolRows, spladeRows } from '../../src/instance/text-forward-pass.js';
import { l2Normalize, sigmoid, softmax } from '../../src/text/pooling.js';

/** Two rows of three tokens, width 2; row 0 right-padded (2 real tokens), row 1 left-padded (2 real tokens). */
const hidden = Float32Array.from([
  1, 2, /**/ 3, -4, /**/ 100, 100,
  -100, -100, /**/ 5, 6, /**/ 7, 0,
]);
const shape = [2, 3, 2] as const;
const mask = [1, 1, 0, 0, 1, 1];
const pool = (mode: Parameters<typeof poolRows>[3], m: ArrayLike<number | bigint> = mask): number[][] =>
  poolRows(hidden, shape, m, mode).map((v) => Array.from(v));

describe('poolRows', () => {
  it('cls takes the first real token of each row, whichever side is padded', () => {
    expect(pool('cls')).toEqual([[1, 2], [5, 6]]);
  });

  it('last-token takes the last position whose mask is 1', () => {
    expect(pool('last-token')).toEqual([[3, -4], [7, 0]]);
  });

  it('mean averages the real tokens only', () => {
    expect(pool('mean')).toEqual([[2, -1], [6, 3]]);
  });

  it('max ignores padding even where padding holds the largest values', () => {
    expect(pool('max')).toEqual([[3, 2], [7, 6]]);
  });

  it('weighted-mean weighs the k-th real token by k', () => {
    // row 0: (1*1 + 2*3) / 3, (1*2 + 2*-4) / 3; row 1: (1*5 + 2*7) / 3, (1*6 + 2*0) / 3
    const [a, b] = pool('weighted-mean');
    expect(a![0]).toBeCloseTo(7 / 3, 6);
    expect(a![1]).toBeCloseTo(-2, 6);
    expect(b![0]).toBeCloseTo(19 / 3, 6);
    expect(b![1]).toBeCloseTo(2, 6);
  });

  it('accepts a bigint mask, as ONNX INT64 attention masks come', () => {
    expect(pool('mean', mask.map(BigInt))).toEqual(pool('mean'));
  });

  it('pools a row with no real token to zeros', () => {
    expect(pool('mean', [0, 0, 0, 1, 1, 1])[0]).toEqual([0, 0]);
    expect(pool('max', [0, 0, 0, 1, 1, 1])[0]).toEqual([0, 0]);
  });

  it('splade is max over real tokens of log(1 + relu(x))', () => {
    expect(pool('splade')[0]![0]).toBeCloseTo(Math.log(4), 6);
    expect(pool('splade')[0]![1]).toBeCloseTo(Math.log(3), 6);
    expect(pool('splade')[1]).toEqual([Math.fround(Math.log(8)), Math.fround(Math.log(7))]);
  });

  it('refuses data that does not match the shape', () => {
    expect(() => poolRows(hidden.subarray(1), shape, mask, 'mean')).toThrow(RangeError);
    expect(() => poolRows(hidden, shape, mask.slice(1), 'mean')).toThrow(RangeError);
  });
});

describe('spladeRows', () => {
  it('keeps the non-zero entries sorted by index', () => {
    const logits = Float32Array.from([
      -1, 0, 2, -3, /**/ 0.5, -2, 1, -1,
    ]);
    const rows = spladeRows(logits, [1, 2, 4], [1, 1]);
    expect(rows[0]!.map((e) => e.index)).toEqual([0, 2]);
    expect(rows[0]![0]!.value).toBeCloseTo(Math.log1p(0.5), 6);
    expect(rows[0]![1]!.value).toBeCloseTo(Math.log1p(2), 6);
  });

  it('ignores masked tokens', () => {
    const rows = spladeRows(Float32Array.from([5, 0, 0, 1]), [1, 2, 2], [0, 1]);
    expect(rows[0]).toEqual([{ index: 1, value: Math.fround(Math.log(2)) }]);
  });
});

describe('l2Normalize', () => {
  it('scales to unit length in a new array', () => {
    const v = Float32Array.from([3, 4]);
    expect(Array.from(l2Normalize(v))).toEqual([Math.fround(0.6), Math.fround(0.8)]);
    expect(Array.from(v)).toEqual([3, 4]);
  });

  it('leaves the zero vector zero', () => {
    expect(Array.from(l2Normalize(new Float32Array(3)))).toEqual([0, 0, 0]);
  });
});

describe('sigmoid and softmax', () => {
  it('sigmoid matches 1 / (1 + e^-x) and does not overflow', () => {
    expect(sigmoid(0)).toBe(0.5);
    expect(sigmoid(2)).toBeCloseTo(1 / (1 + Math.exp(-2)), 12);
    expect(sigmoid(-2)).toBeCloseTo(1 / (1 + Math.exp(2)), 12);
    expect(sigmoid(-1000)).toBe(0);
    expect(sigmoid(1000)).toBe(1);
  });

  it('softmax sums to one and survives large scores', () => {
    const p = softmax(Float32Array.from([1, 2, 3]));
    const e = [1, 2, 3].map((x) => Math.exp(x));
    const total = e[0]! + e[1]! + e[2]!;
    p.forEach((value, i) => expect(value).toBeCloseTo(e[i]! / total, 6));
    expect(Array.from(softmax(Float32Array.from([1000, 1000])))).toEqual([0.5, 0.5]);
  });
});
