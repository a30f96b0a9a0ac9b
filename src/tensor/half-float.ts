/**
 * FP16 (IEEE 754 binary16) and BF16 (bfloat16) ↔ JS number.
 *
 * Hand-written because Node 20 has no Float16Array or Math.f16round, and @petamoriken/float16 (the
 * usual polyfill) covers FP16 but not BF16. One small routine rounds a double straight to either
 * format with round-to-nearest-even (no double rounding through float32), matching numpy's float16
 * and PyTorch's bfloat16 casts.
 */

interface HalfFormat {
  readonly mantissaBits: number;
  /** Exponent bias; the largest biased exponent (all ones) encodes Inf and NaN. */
  readonly bias: number;
  readonly exponentMask: number;
  readonly quietNaN: number;
}

const FP16: HalfFormat = { mantissaBits: 10, bias: 15, exponentMask: 0x1f, quietNaN: 0x7e00 };
const BF16: HalfFormat = { mantissaBits: 7, bias: 127, exponentMask: 0xff, quietNaN: 0x7fc0 };

const SIGN_BIT = 0x8000;
const scratch = new DataView(new ArrayBuffer(8));

function decode(bits: number, f: HalfFormat): number {
  const sign = bits & SIGN_BIT ? -1 : 1;
  const exponent = (bits >>> f.mantissaBits) & f.exponentMask;
  const mantissa = bits & ((1 << f.mantissaBits) - 1);
  if (exponent === f.exponentMask) return mantissa === 0 ? sign * Infinity : NaN;
  if (exponent === 0) return sign * mantissa * 2 ** (1 - f.bias - f.mantissaBits);
  return sign * (mantissa + 2 ** f.mantissaBits) * 2 ** (exponent - f.bias - f.mantissaBits);
}

function encode(value: number, f: HalfFormat): number {
  if (Number.isNaN(value)) return f.quietNaN;
  scratch.setFloat64(0, value);
  const high = scratch.getUint32(0);
  const sign = high >>> 31 ? SIGN_BIT : 0;
  const exponentField = (high >>> 20) & 0x7ff;
  const infinityBits = f.exponentMask << f.mantissaBits;
  if (exponentField === 0x7ff) return sign | infinityBits;
  // Doubles below 2^-1022 (zero and double subnormals) are far under either format's smallest subnormal.
  if (exponentField === 0) return sign;

  // The 53-bit significand is an exact integer in a double, so all arithmetic below is exact.
  const significand = 2 ** 52 + (high & 0xfffff) * 2 ** 32 + scratch.getUint32(4);
  const exponent = exponentField - 1023;
  const minExponent = 1 - f.bias;
  // Scale so one unit is one step of the target format at this magnitude (subnormal steps below minExponent).
  const shift = 52 - f.mantissaBits + Math.max(minExponent - exponent, 0);
  const scaled = significand / 2 ** shift;
  let steps = Math.floor(scaled);
  const remainder = scaled - steps;
  if (remainder > 0.5 || (remainder === 0.5 && steps % 2 === 1)) steps += 1;

  // Normal: steps includes the implicit leading one, so adding it to (exponent field - 1) also carries
  // a rounded-up mantissa into the exponent. Subnormal: the exponent field is 0 and steps is the mantissa.
  const exponentBase = exponent >= minExponent ? (exponent + f.bias - 1) * 2 ** f.mantissaBits : 0;
  const magnitude = exponentBase + steps;
  return sign | Math.min(magnitude, infinityBits);
}

export function fp16BitsToNumber(bits: number): number {
  return decode(bits, FP16);
}

export function numberToFp16Bits(value: number): number {
  return encode(value, FP16);
}

export function bf16BitsToNumber(bits: number): number {
  return decode(bits, BF16);
}

export function numberToBf16Bits(value: number): number {
  return encode(value, BF16);
}
