import { describe, expect, it } from 'vitest';
import { bf16BitsToNumber, fp16BitsToNumber, numberToBf16Bits, numberToFp16Bits } from '../../src/tensor/half-float.js';

describe('FP16', () => {
  it.each([
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff], // largest finite
    [2 ** -14, 0x0400], // smallest normal
    [1023 * 2 ** -24, 0x03ff], // largest subnormal
    [2 ** -24, 0x0001], // smallest subnormal
    [0.1, 0x2e66], // numpy: np.float16(0.1).view('u2')
    [1 / 3, 0x3555],
    [0, 0x0000],
    [-0, 0x8000],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
    [NaN, 0x7e00],
  ])('encodes %s as %s', (value, bits) => {
    expect(numberToFp16Bits(value)).toBe(bits);
  });

  it.each([
    ['65519 rounds down to the largest finite', 65519, 0x7bff],
    ['65520 (the halfway point to 2^16) overflows to Inf', 65520, 0x7c00],
    ['1e6 overflows to Inf', 1e6, 0x7c00],
    ['-1e300 overflows to -Inf', -1e300, 0xfc00],
    ['2^-25 ties to even zero', 2 ** -25, 0x0000],
    ['a hair above 2^-25 rounds up to the smallest subnormal', 2 ** -25 * (1 + 2 ** -20), 0x0001],
    ['3·2^-25 ties to the even subnormal 2', 3 * 2 ** -25, 0x0002],
    ['the largest subnormal plus half a step rounds up into the normals', 1023.5 * 2 ** -24, 0x0400],
    ['1 + 2^-11 ties to even 1.0', 1 + 2 ** -11, 0x3c00],
    ['1 + 3·2^-11 ties to even 1 + 2^-9', 1 + 3 * 2 ** -11, 0x3c02],
    ['2049 ties to even 2048', 2049, 0x6800],
    ['2051 ties to even 2052', 2051, 0x6802],
    ['a value just above a tie rounds up (no double rounding through float32)', 1 + 2 ** -11 + 2 ** -40, 0x3c01],
    ['a double subnormal flushes to signed zero', -1e-310, 0x8000],
  ])('%s', (_, value, bits) => {
    expect(numberToFp16Bits(value)).toBe(bits);
  });

  it.each([
    [0x7bff, 65504],
    [0x0001, 2 ** -24],
    [0x03ff, 1023 * 2 ** -24],
    [0x3555, 0.333251953125],
    [0xc000, -2],
    [0x7c00, Infinity],
    [0xfc00, -Infinity],
  ])('decodes %s as %s', (bits, value) => {
    expect(fp16BitsToNumber(bits)).toBe(value);
  });

  it('decodes -0 and every NaN pattern', () => {
    expect(Object.is(fp16BitsToNumber(0x8000), -0)).toBe(true);
    expect(fp16BitsToNumber(0x7e00)).toBeNaN();
    expect(fp16BitsToNumber(0x7c01)).toBeNaN();
    expect(fp16BitsToNumber(0xffff)).toBeNaN();
  });

  it('round-trips all 65536 bit patterns except NaNs', () => {
    const mismatches: number[] = [];
    for (let bits = 0; bits <= 0xffff; bits++) {
      const value = fp16BitsToNumber(bits);
      if (!Number.isNaN(value) && numberToFp16Bits(value) !== bits) mismatches.push(bits);
    }
    expect(mismatches).toEqual([]);
  });
});

describe('BF16', () => {
  const BF16_MAX = (2 - 2 ** -7) * 2 ** 127;

  it.each([
    [1, 0x3f80],
    [-2, 0xc000],
    [BF16_MAX, 0x7f7f],
    [2 ** -126, 0x0080], // smallest normal
    [2 ** -133, 0x0001], // smallest subnormal
    [0.1, 0x3dcd], // torch.tensor(0.1, dtype=torch.bfloat16).view(torch.int16)
    [-0, 0x8000],
    [Infinity, 0x7f80],
    [-Infinity, 0xff80],
    [NaN, 0x7fc0],
  ])('encodes %s as %s', (value, bits) => {
    expect(numberToBf16Bits(value)).toBe(bits);
  });

  it.each([
    ['the halfway point above the largest finite ties to even, which is Inf', 2 ** 127 * (2 - 2 ** -8), 0x7f80],
    ['just below that halfway point stays finite', 2 ** 127 * (2 - 2 ** -8) - 2 ** 100, 0x7f7f],
    ['the largest float32 overflows to Inf', 3.4028234663852886e38, 0x7f80],
    ['1 + 2^-8 ties to even 1.0', 1 + 2 ** -8, 0x3f80],
    ['1 + 3·2^-8 ties to even 1 + 2^-6', 1 + 3 * 2 ** -8, 0x3f82],
    ['2^-134 ties to even zero', 2 ** -134, 0x0000],
    ['3·2^-134 ties to the even subnormal 2', 3 * 2 ** -134, 0x0002],
  ])('%s', (_, value, bits) => {
    expect(numberToBf16Bits(value)).toBe(bits);
  });

  it('decodes edge patterns', () => {
    expect(bf16BitsToNumber(0x7f7f)).toBe(BF16_MAX);
    expect(bf16BitsToNumber(0x0001)).toBe(2 ** -133);
    expect(bf16BitsToNumber(0x3dcd)).toBe(0.10009765625);
    expect(bf16BitsToNumber(0xff80)).toBe(-Infinity);
    expect(Object.is(bf16BitsToNumber(0x8000), -0)).toBe(true);
    expect(bf16BitsToNumber(0x7fc1)).toBeNaN();
  });

  it('agrees with the upper half of the float32 pattern for every BF16 value', () => {
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    const mismatches: number[] = [];
    for (let bits = 0; bits <= 0xffff; bits++) {
      u32[0] = bits << 16;
      const value = bf16BitsToNumber(bits);
      const sameValue = Number.isNaN(f32[0]!) ? Number.isNaN(value) : Object.is(value, f32[0]);
      if (!sameValue || (!Number.isNaN(value) && numberToBf16Bits(value) !== bits)) mismatches.push(bits);
    }
    expect(mismatches).toEqual([]);
  });
});
