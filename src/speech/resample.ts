/**
 * Band-limited resampling of a whole utterance: windowed-sinc interpolation with a Hann window, 6
 * zero crossings and a cutoff at 0.99 of the lower Nyquist frequency, computed polyphase over the
 * rates' greatest common divisor. This is torchaudio.functional.resample's default filter, the
 * family FunASR's C++ runtime resamples with (Kaldi's LinearResample, runtime/onnxruntime/src/resample.cpp).
 * Hand-written: the one npm resampler at hand (wavefile's) shifts the signal by about a sample and
 * takes a quarter of a second per second of audio; this is exact to torchaudio within float rounding.
 */
const ZERO_CROSSINGS = 6;
const ROLLOFF = 0.99;

export function resample(samples: Float32Array, fromRate: number, toRate: number): Float32Array {
  if (fromRate === toRate) return samples;
  const g = gcd(fromRate, toRate);
  const orig = fromRate / g;
  const next = toRate / g;
  const baseFreq = Math.min(orig, next) * ROLLOFF;
  const width = Math.ceil((ZERO_CROSSINGS * orig) / baseFreq);
  const taps = 2 * width + orig;
  // One kernel per output phase p: output k·next + p reads input k·orig − width + i, i < taps.
  const kernels = new Float64Array(next * taps);
  for (let p = 0; p < next; p++) {
    for (let i = 0; i < taps; i++) {
      let t = (-p / next + (i - width) / orig) * baseFreq;
      t = Math.max(-ZERO_CROSSINGS, Math.min(ZERO_CROSSINGS, t));
      const window = Math.cos((t * Math.PI) / ZERO_CROSSINGS / 2) ** 2;
      const x = t * Math.PI;
      kernels[p * taps + i] = (x === 0 ? 1 : Math.sin(x) / x) * window * (baseFreq / orig);
    }
  }
  const length = Math.ceil((next * samples.length) / orig);
  const out = new Float32Array(length);
  for (let j = 0; j < length; j++) {
    const k = Math.floor(j / next);
    const p = j - k * next;
    const start = k * orig - width;
    let sum = 0;
    const from = Math.max(0, -start);
    const to = Math.min(taps, samples.length - start);
    for (let i = from; i < to; i++) sum += kernels[p * taps + i] * samples[start + i];
    out[j] = sum;
  }
  return out;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
