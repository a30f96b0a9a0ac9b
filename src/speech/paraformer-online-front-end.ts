import { applyCmvn, type Cmvn } from './cmvn.js';
import { FUNASR_FBANK, KaldiFbank } from './kaldi-fbank.js';
import type { FrontEndConfig } from './speech-front-end.js';

/**
 * FunASR's front end over a live stream (funasr_onnx/utils/frontend.py, WavFrontendOnline): audio
 * arrives a chunk at a time, and each call returns the LFR + CMVN frames that are complete so far.
 * Kaldi's fbank frames (snip_edges) depend only on their own 400 samples and LFR stacks only on
 * their 7 fbank frames, so the frames returned over a stream are exactly the offline front end's
 * (speech-front-end.ts) over the whole stream: samples short of a frame, and fbank frames short of
 * a stack, wait for the next chunk; `final` flushes the last stacks, padded with the last frame as
 * apply_lfr pads them. Dither is 0, as in the offline front end.
 */
export class StreamingFrontEnd {
  private readonly fbank: KaldiFbank;
  private readonly melBins: number;
  /** Samples (×32768) not yet covered by a whole frame, and those overlapping the next frame. */
  private pending = new Float32Array(0);
  /** Fbank frames from the first one the next stack uses, left padding included. */
  private frames: Float32Array[] = [];
  private fbankFrames = 0;
  private emitted = 0;

  constructor(
    private readonly config: FrontEndConfig,
    private readonly cmvn: Cmvn,
  ) {
    this.fbank = new KaldiFbank({ ...FUNASR_FBANK, numMelBins: config.numMelBins, frameLengthMs: config.frameLengthMs, frameShiftMs: config.frameShiftMs });
    this.melBins = config.numMelBins;
  }

  get dim(): number {
    return this.config.numMelBins * this.config.lfrM;
  }

  /** The next feature frames, `dim` values each, for `samples` in [-1, 1] at 16 kHz. */
  accept(samples: Float32Array, final: boolean): Float32Array {
    const joined = new Float32Array(this.pending.length + samples.length);
    joined.set(this.pending);
    for (let i = 0; i < samples.length; i++) joined[this.pending.length + i] = samples[i] * 32768;
    const { frameLength, frameShift } = this.fbank;
    const count = joined.length < frameLength ? 0 : 1 + Math.floor((joined.length - frameLength) / frameShift);
    if (count > 0) {
      const fbank = this.fbank.compute(joined.subarray(0, (count - 1) * frameShift + frameLength));
      for (let f = 0; f < count; f++) this.push(fbank.subarray(f * this.melBins, (f + 1) * this.melBins));
    }
    this.pending = joined.slice(count * frameShift);
    const stacks = this.stack(final);
    if (final) this.reset();
    return applyCmvn(stacks, this.cmvn);
  }

  private push(frame: Float32Array): void {
    if (this.fbankFrames === 0) for (let j = 0; j < Math.floor((this.config.lfrM - 1) / 2); j++) this.frames.push(frame);
    this.frames.push(frame);
    this.fbankFrames++;
  }

  /** apply_lfr's stacks that are whole (or, when final, every one up to ceil(T / n), padded). */
  private stack(final: boolean): Float32Array {
    const { lfrM: m, lfrN: n } = this.config;
    const total = Math.ceil(this.fbankFrames / n);
    const out: Float32Array[] = [];
    while (this.emitted < total && (this.frames.length >= m || final)) {
      const stacked = new Float32Array(m * this.melBins);
      for (let j = 0; j < m; j++) stacked.set(this.frames[Math.min(j, this.frames.length - 1)], j * this.melBins);
      out.push(stacked);
      this.frames.splice(0, n);
      this.emitted++;
    }
    const data = new Float32Array(out.length * m * this.melBins);
    out.forEach((stacked, i) => data.set(stacked, i * stacked.length));
    return data;
  }

  private reset(): void {
    this.pending = new Float32Array(0);
    this.frames = [];
    this.fbankFrames = 0;
    this.emitted = 0;
  }
}
