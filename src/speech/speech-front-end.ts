import { applyCmvn, type Cmvn } from './cmvn.js';
import { FUNASR_FBANK, KaldiFbank } from './kaldi-fbank.js';
import { stackLowFrameRate } from './low-frame-rate.js';

/** config.yaml's `frontend_conf`, with the values FunASR's templates use when it leaves one out. */
export interface FrontEndConfig {
  readonly numMelBins: number;
  readonly frameLengthMs: number;
  readonly frameShiftMs: number;
  readonly lfrM: number;
  readonly lfrN: number;
}

export const DEFAULT_FRONT_END: FrontEndConfig = Object.freeze({ numMelBins: 80, frameLengthMs: 25, frameShiftMs: 10, lfrM: 7, lfrN: 6 });

/** An utterance's features: `frames` rows of `dim` values (lfr_m × mel bins). */
export interface SpeechFeatures {
  readonly data: Float32Array;
  readonly frames: number;
  readonly dim: number;
}

/**
 * FunASR's WavFrontend as its runtimes run it (funasr_onnx/utils/frontend.py, fbank then
 * lfr_cmvn): samples in [-1, 1] scaled by 32768, Kaldi fbank, low frame rate stacking, CMVN.
 */
export class SpeechFrontEnd {
  private readonly fbank: KaldiFbank;

  constructor(
    readonly config: FrontEndConfig,
    private readonly cmvn: Cmvn,
  ) {
    this.fbank = new KaldiFbank({ ...FUNASR_FBANK, numMelBins: config.numMelBins, frameLengthMs: config.frameLengthMs, frameShiftMs: config.frameShiftMs });
    const dim = config.numMelBins * config.lfrM;
    if (cmvn.shift.length !== dim) throw new Error(`am.mvn has ${cmvn.shift.length} values per frame where frontend_conf gives ${config.numMelBins} mel bins × lfr_m ${config.lfrM} = ${dim}`);
  }

  get dim(): number {
    return this.config.numMelBins * this.config.lfrM;
  }

  /** LFR frames of `count` samples, without computing them: ceil(fbank frames / lfr_n) (low-frame-rate.ts). */
  frameCount(count: number): number {
    return Math.ceil(this.fbank.frameCount(count) / this.config.lfrN);
  }

  /** The longest audio, in seconds, whose features fit in `frames` LFR frames: lfr_n × frames fbank frames. */
  secondsOfFrames(frames: number): number {
    return (this.config.frameLengthMs + (frames * this.config.lfrN - 1) * this.config.frameShiftMs) / 1000;
  }

  compute(samples: Float32Array): SpeechFeatures {
    const scaled = new Float32Array(samples.length);
    for (let i = 0; i < samples.length; i++) scaled[i] = samples[i] * 32768;
    const fbank = this.fbank.compute(scaled);
    const stacked = stackLowFrameRate(fbank, this.config.numMelBins, this.config.lfrM, this.config.lfrN);
    const data = applyCmvn(stacked, this.cmvn);
    return { data, frames: data.length / this.dim, dim: this.dim };
  }
}
