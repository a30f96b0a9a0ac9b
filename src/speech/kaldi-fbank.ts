import FFT from 'fft.js';

/**
 * Kaldi's log mel filterbank with the options FunASR's runtimes set (funasr_onnx/utils/frontend.py
 * and the C++ runtime, through kaldi-native-fbank): 16 kHz, 25 ms frames every 10 ms with
 * snip_edges, remove_dc_offset, pre-emphasis 0.97, a Hamming window, a 512-point power spectrum,
 * 80 HTK-mel triangles from 20 Hz to Nyquist, log with float epsilon as floor, no energy. Dither is
 * 0 here, as FunASR's C++ runtime forces it; the Python front end dithers by default (docs/speech.md).
 * The FFT is fft.js; the frame arithmetic around it is Kaldi's (feature-window.cc, mel-computations.cc),
 * written out here because no maintained JavaScript package reproduces Kaldi's fbank to 1e-4.
 */
export interface FbankOptions {
  readonly sampleRate: number;
  readonly numMelBins: number;
  readonly frameLengthMs: number;
  readonly frameShiftMs: number;
  readonly lowFreq: number;
  readonly preemphasis: number;
}

export const FUNASR_FBANK: FbankOptions = Object.freeze({ sampleRate: 16_000, numMelBins: 80, frameLengthMs: 25, frameShiftMs: 10, lowFreq: 20, preemphasis: 0.97 });

/** Kaldi's floor under a mel energy before the log: std::numeric_limits<float>::epsilon(). */
const FLOAT_EPSILON = 1.1920928955078125e-7;

/** The filterbank's fixed parts (window, mel triangles, FFT plan), computed once per option set. */
export class KaldiFbank {
  readonly frameLength: number;
  readonly frameShift: number;
  private readonly paddedLength: number;
  private readonly window: Float64Array;
  /** Per mel bin: the first FFT bin it covers and its weights from there. */
  private readonly banks: { readonly first: number; readonly weights: Float64Array }[];
  private readonly fft: FFT;

  constructor(readonly options: FbankOptions = FUNASR_FBANK) {
    this.frameLength = Math.round((options.sampleRate * options.frameLengthMs) / 1000);
    this.frameShift = Math.round((options.sampleRate * options.frameShiftMs) / 1000);
    this.paddedLength = 2 ** Math.ceil(Math.log2(this.frameLength));
    this.window = Float64Array.from({ length: this.frameLength }, (_, i) => 0.54 - 0.46 * Math.cos((2 * Math.PI * i) / (this.frameLength - 1)));
    this.banks = melBanks(options, this.paddedLength);
    this.fft = new FFT(this.paddedLength);
  }

  /** Frames of `count` samples with snip_edges: none below one frame length. */
  frameCount(count: number): number {
    return count < this.frameLength ? 0 : 1 + Math.floor((count - this.frameLength) / this.frameShift);
  }

  /**
   * Log mel energies, frames × bins, row-major. `samples` are on FunASR's scale: 16-bit values
   * (the runtimes multiply [-1, 1] audio by 32768 first).
   */
  compute(samples: ArrayLike<number>): Float32Array {
    const frames = this.frameCount(samples.length);
    const bins = this.options.numMelBins;
    const out = new Float32Array(frames * bins);
    const frame = new Float64Array(this.paddedLength);
    const spectrum = this.fft.createComplexArray();
    const power = new Float64Array(this.paddedLength / 2 + 1);
    for (let f = 0; f < frames; f++) {
      const start = f * this.frameShift;
      let mean = 0;
      for (let i = 0; i < this.frameLength; i++) mean += samples[start + i];
      mean /= this.frameLength;
      for (let i = 0; i < this.frameLength; i++) frame[i] = samples[start + i] - mean;
      // Kaldi pre-emphasises backwards so each sample uses its unmodified predecessor; the first uses itself.
      for (let i = this.frameLength - 1; i > 0; i--) frame[i] -= this.options.preemphasis * frame[i - 1];
      frame[0] -= this.options.preemphasis * frame[0];
      for (let i = 0; i < this.frameLength; i++) frame[i] *= this.window[i];
      frame.fill(0, this.frameLength);
      this.fft.realTransform(spectrum, frame);
      for (let k = 0; k < power.length; k++) power[k] = spectrum[2 * k] ** 2 + spectrum[2 * k + 1] ** 2;
      for (let b = 0; b < bins; b++) {
        const { first, weights } = this.banks[b];
        let energy = 0;
        for (let j = 0; j < weights.length; j++) energy += weights[j] * power[first + j];
        out[f * bins + b] = Math.log(Math.max(energy, FLOAT_EPSILON));
      }
    }
    return out;
  }
}

const f32 = Math.fround;

/** HTK mel, in float as kaldi-native-fbank computes it (MelScale: 1127 · logf(1 + f / 700)). */
function mel(freq: number): number {
  return f32(1127 * f32(Math.log(f32(1 + f32(freq / 700)))));
}

/**
 * Kaldi's MelBanks: triangles equally spaced on the mel scale, over the FFT bins below Nyquist.
 * The edges are in float, rounded as torchaudio's get_mel_banks rounds them (kaldi-native-fbank's
 * float code rounds within the same 1e-4 of a log energy): an FFT bin within rounding of a
 * triangle's edge gets the weight the runtimes give it, not a double-precision one.
 */
function melBanks(options: FbankOptions, paddedLength: number): { first: number; weights: Float64Array }[] {
  const binWidth = f32(options.sampleRate / paddedLength);
  const melLow = 1127 * Math.log(1 + options.lowFreq / 700);
  const melHigh = 1127 * Math.log(1 + options.sampleRate / 2 / 700);
  const delta = f32((melHigh - melLow) / (options.numMelBins + 1));
  const low = f32(melLow);
  const fftBins = paddedLength / 2;
  return Array.from({ length: options.numMelBins }, (_, b) => {
    const left = f32(low + f32(b * delta));
    const center = f32(low + f32((b + 1) * delta));
    const right = f32(low + f32((b + 2) * delta));
    const all = new Float64Array(fftBins);
    let first = -1;
    let last = -1;
    for (let i = 0; i < fftBins; i++) {
      const m = mel(f32(binWidth * i));
      if (m > left && m < right) {
        all[i] = m <= center ? f32(f32(m - left) / f32(center - left)) : f32(f32(right - m) / f32(right - center));
        if (first < 0) first = i;
        last = i;
      }
    }
    return first < 0 ? { first: 0, weights: new Float64Array(0) } : { first, weights: all.slice(first, last + 1) };
  });
}
