/**
 * FSMN-VAD's segmentation, FunASR's E2EVadModel (runtime/python/onnxruntime/funasr_onnx/utils/
 * e2e_vad.py, the same state machine as the C++ runtime's e2e-vad.h) in TypeScript: per 10 ms frame,
 * the model's silence probability and the frame's decibels make a speech / silence decision; a
 * window detector turns decisions into changes; the state machine turns changes into segments,
 * with FunASR's start look-back, end look-ahead, end silence and longest-segment rules. Written by
 * hand because it is FunASR's own algorithm, which no package implements. FunASR keeps sample
 * buffers beside the segment times; only the times are kept here, since the caller holds the audio.
 */

/** `model_conf` of an FSMN-VAD export's config.yaml (funasr/models/fsmn_vad_streaming/template.yaml), with VADXOptions' defaults. */
export interface VadOptions {
  readonly maxEndSilenceTime: number;
  readonly maxStartSilenceTime: number;
  readonly windowSizeMs: number;
  readonly silToSpeechTimeThres: number;
  readonly speechToSilTimeThres: number;
  readonly speech2NoiseRatio: number;
  readonly doExtend: boolean;
  readonly lookbackTimeStartPoint: number;
  readonly lookaheadTimeEndPoint: number;
  readonly maxSingleSegmentTime: number;
  readonly snrThres: number;
  readonly noiseFrameNumUsedForSnr: number;
  readonly decibelThres: number;
  readonly speechNoiseThres: number;
  readonly silPdfIds: readonly number[];
  readonly frameInMs: number;
  readonly frameLengthMs: number;
  /** 0: one utterance then stop (kVadSingleUtteranceDetectMode); 1: segment after segment. */
  readonly detectMode: 0 | 1;
}

export const DEFAULT_VAD_OPTIONS: VadOptions = Object.freeze({
  maxEndSilenceTime: 800, maxStartSilenceTime: 3000, windowSizeMs: 200, silToSpeechTimeThres: 150, speechToSilTimeThres: 150,
  speech2NoiseRatio: 1.0, doExtend: true, lookbackTimeStartPoint: 200, lookaheadTimeEndPoint: 100, maxSingleSegmentTime: 60000,
  snrThres: -100, noiseFrameNumUsedForSnr: 100, decibelThres: -100, speechNoiseThres: 0.6, silPdfIds: [0], frameInMs: 10, frameLengthMs: 25,
  detectMode: 1,
});

/** config.yaml's snake_case `model_conf` keys to VadOptions. */
export function vadOptions(modelConf: Readonly<Record<string, unknown>>): VadOptions {
  const num = (key: string, fallback: number): number => (typeof modelConf[key] === 'number' ? (modelConf[key] as number) : fallback);
  const d = DEFAULT_VAD_OPTIONS;
  const ids = modelConf.sil_pdf_ids;
  return {
    maxEndSilenceTime: num('max_end_silence_time', d.maxEndSilenceTime),
    maxStartSilenceTime: num('max_start_silence_time', d.maxStartSilenceTime),
    windowSizeMs: num('window_size_ms', d.windowSizeMs),
    silToSpeechTimeThres: num('sil_to_speech_time_thres', d.silToSpeechTimeThres),
    speechToSilTimeThres: num('speech_to_sil_time_thres', d.speechToSilTimeThres),
    speech2NoiseRatio: num('speech_2_noise_ratio', d.speech2NoiseRatio),
    doExtend: num('do_extend', 1) !== 0,
    lookbackTimeStartPoint: num('lookback_time_start_point', d.lookbackTimeStartPoint),
    lookaheadTimeEndPoint: num('lookahead_time_end_point', d.lookaheadTimeEndPoint),
    maxSingleSegmentTime: num('max_single_segment_time', d.maxSingleSegmentTime),
    snrThres: num('snr_thres', d.snrThres),
    noiseFrameNumUsedForSnr: num('noise_frame_num_used_for_snr', d.noiseFrameNumUsedForSnr),
    decibelThres: num('decibel_thres', d.decibelThres),
    speechNoiseThres: num('speech_noise_thres', d.speechNoiseThres),
    silPdfIds: Array.isArray(ids) && ids.every((i) => Number.isInteger(i)) ? (ids as number[]) : d.silPdfIds,
    frameInMs: num('frame_in_ms', d.frameInMs),
    frameLengthMs: num('frame_length_ms', d.frameLengthMs),
    detectMode: num('detect_mode', d.detectMode) === 0 ? 0 : 1,
  };
}

/** A segment boundary in ms from the start of the stream, as FunASR's online VAD reports them ([start, -1], then [-1, end]). */
export interface VadBoundary {
  readonly kind: 'start' | 'end';
  readonly ms: number;
}

const enum State { StartNotDetected, InSpeech, EndDetected }
const enum Change { Speech2Speech, Speech2Sil, Sil2Sil, Sil2Speech }

/** FunASR's WindowDetector: a sliding sum of speech decisions, with hysteresis between the two thresholds. */
class WindowDetector {
  readonly size: number;
  private readonly win: number[];
  private sum = 0;
  private pos = 0;
  private speech = false;
  private readonly silToSpeech: number;
  private readonly speechToSil: number;

  constructor(o: VadOptions) {
    this.size = Math.trunc(o.windowSizeMs / o.frameInMs);
    this.win = new Array<number>(this.size).fill(0);
    this.silToSpeech = Math.trunc(o.silToSpeechTimeThres / o.frameInMs);
    this.speechToSil = Math.trunc(o.speechToSilTimeThres / o.frameInMs);
  }

  reset(): void {
    this.win.fill(0);
    this.sum = 0;
    this.pos = 0;
    this.speech = false;
  }

  detect(speech: boolean): Change {
    const v = speech ? 1 : 0;
    this.sum += v - this.win[this.pos];
    this.win[this.pos] = v;
    this.pos = (this.pos + 1) % this.size;
    if (!this.speech && this.sum >= this.silToSpeech) {
      this.speech = true;
      return Change.Sil2Speech;
    }
    if (this.speech && this.sum <= this.speechToSil) {
      this.speech = false;
      return Change.Speech2Sil;
    }
    return this.speech ? Change.Speech2Speech : Change.Sil2Sil;
  }
}

interface OutputSegment {
  startMs: number;
  endMs: number;
  hasStart: boolean;
  hasEnd: boolean;
}

/**
 * One stream's segmentation. `frame` takes each frame in order (its silence probability: the sum of
 * the model's scores at `silPdfIds`; its decibels: 10·log10(Σx² + 1e-6) over its 25 ms of [-1, 1]
 * samples); `finish` takes the stream's last frame, which FunASR's DetectLastFrames treats apart.
 * Boundaries come out as FunASR's online mode reports them; `segments()` gives the offline list.
 */
export class FsmnVadStateMachine {
  private readonly o: VadOptions;
  private readonly window: WindowDetector;
  private state = State.StartNotDetected;
  private frames = 0;
  private dataBufStartFrame = 0;
  private latestConfirmedSpeechFrame = 0;
  private latestConfirmedSilenceFrame = -1;
  private continuousSilenceFrames = 0;
  private confirmedStartFrame = -1;
  private confirmedEndFrame = -1;
  private endTimesDetected = 0;
  private noiseAverageDecibel = -100;
  private readonly maxEndSilMs: number;
  private readonly output: OutputSegment[] = [];
  /** Online reporting: the output segment the next boundary belongs to, and whether its start was reported. */
  private reported = 0;
  private startReported = false;

  constructor(options: VadOptions = DEFAULT_VAD_OPTIONS) {
    this.o = options;
    this.window = new WindowDetector(options);
    this.maxEndSilMs = options.maxEndSilenceTime - options.speechToSilTimeThres;
  }

  /** Frames taken so far. */
  get frameCount(): number {
    return this.frames;
  }

  frame(silenceProb: number, decibel: number): VadBoundary[] {
    this.step(silenceProb, decibel, false);
    return this.boundaries();
  }

  finish(silenceProb: number, decibel: number): VadBoundary[] {
    this.step(silenceProb, decibel, true);
    return this.boundaries();
  }

  /** Every segment so far, `[start_ms, end_ms]`, as FunASR's offline VAD returns them once the stream is final. */
  segments(): [number, number][] {
    return this.output.map((s) => [s.startMs, s.endMs]);
  }

  private step(silenceProb: number, decibel: number, last: boolean): void {
    const t = this.frames++;
    // Only the single-utterance mode stays here: FunASR evaluates no more frames once its one segment ended.
    if (this.state === State.EndDetected) return;
    this.detectOneFrame(this.frameIsSpeech(silenceProb, decibel, t), t, last);
  }

  /** GetFrameState. */
  private frameIsSpeech(silenceProb: number, decibel: number, t: number): boolean {
    if (decibel < this.o.decibelThres) {
      // FunASR's GetFrameState runs the window detector on such a frame here, and its caller runs it again.
      this.detectOneFrame(false, t, false);
      return false;
    }
    const noise = Math.log(silenceProb) * this.o.speech2NoiseRatio;
    const speechProb = Math.log(1 - silenceProb);
    if (Math.exp(speechProb) >= Math.exp(noise) + this.o.speechNoiseThres) {
      return decibel - this.noiseAverageDecibel >= this.o.snrThres && decibel >= this.o.decibelThres;
    }
    const n = this.o.noiseFrameNumUsedForSnr;
    this.noiseAverageDecibel = this.noiseAverageDecibel < -99.9 ? decibel : (decibel + this.noiseAverageDecibel * (n - 1)) / n;
    return false;
  }

  private latencyFrames(): number {
    return this.window.size + (this.o.doExtend ? Math.trunc(this.o.lookbackTimeStartPoint / this.o.frameInMs) : 0);
  }

  private tooLong(t: number): boolean {
    return t - this.confirmedStartFrame + 1 > this.o.maxSingleSegmentTime / this.o.frameInMs;
  }

  /** DetectOneFrame. */
  private detectOneFrame(speech: boolean, t: number, last: boolean): void {
    const change = this.window.detect(speech);
    const shift = this.o.frameInMs;
    if (change === Change.Sil2Speech) {
      this.continuousSilenceFrames = 0;
      if (this.state === State.StartNotDetected) {
        const start = Math.max(this.dataBufStartFrame, t - this.latencyFrames());
        this.onVoiceStart(start);
        this.state = State.InSpeech;
        for (let f = start + 1; f <= t; f++) this.onVoiceDetected(f);
      } else if (this.state === State.InSpeech) {
        for (let f = this.latestConfirmedSpeechFrame + 1; f < t; f++) this.onVoiceDetected(f);
        this.continueSpeech(t, last);
      }
    } else if (change === Change.Speech2Sil || change === Change.Speech2Speech) {
      this.continuousSilenceFrames = 0;
      if (this.state === State.InSpeech) this.continueSpeech(t, last);
    } else {
      this.continuousSilenceFrames++;
      if (this.state === State.StartNotDetected) {
        const timeout = this.o.detectMode === 0 && this.continuousSilenceFrames * shift > this.o.maxStartSilenceTime;
        if (timeout || (last && this.endTimesDetected === 0)) {
          for (let f = this.latestConfirmedSilenceFrame + 1; f < t; f++) this.onSilenceDetected(f);
          // A zero-length decision: FunASR's fake start and end, which add no segment.
          this.confirmedStartFrame = 0;
          this.confirmedEndFrame = 0;
          this.endTimesDetected++;
          this.state = State.EndDetected;
        } else if (t >= this.latencyFrames()) {
          this.onSilenceDetected(t - this.latencyFrames());
        }
      } else if (this.state === State.InSpeech) {
        if (this.continuousSilenceFrames * shift >= this.maxEndSilMs) {
          let lookback = Math.trunc(this.maxEndSilMs / shift);
          if (this.o.doExtend) lookback = Math.max(0, lookback - Math.trunc(this.o.lookaheadTimeEndPoint / shift) - 1);
          this.onVoiceEnd(t - lookback);
          this.state = State.EndDetected;
        } else if (this.tooLong(t)) {
          this.onVoiceEnd(t);
          this.state = State.EndDetected;
        } else if (this.o.doExtend && !last) {
          if (this.continuousSilenceFrames <= Math.trunc(this.o.lookaheadTimeEndPoint / shift)) this.onVoiceDetected(t);
        } else if (last) {
          this.onVoiceEnd(t);
          this.state = State.EndDetected;
        }
      }
    }
    if (this.state === State.EndDetected && this.o.detectMode === 1) this.resetDetection();
  }

  /** The InSpeech branch shared by three changes: cut a segment grown too long, close at the last frame, else extend. */
  private continueSpeech(t: number, last: boolean): void {
    if (this.tooLong(t)) {
      this.onVoiceEnd(t);
      this.state = State.EndDetected;
    } else if (!last) {
      this.onVoiceDetected(t);
    } else {
      this.onVoiceEnd(t);
      this.state = State.EndDetected;
    }
  }

  private resetDetection(): void {
    this.continuousSilenceFrames = 0;
    this.latestConfirmedSpeechFrame = 0;
    this.latestConfirmedSilenceFrame = -1;
    this.confirmedStartFrame = -1;
    this.confirmedEndFrame = -1;
    this.state = State.StartNotDetected;
    this.window.reset();
  }

  private onSilenceDetected(f: number): void {
    this.latestConfirmedSilenceFrame = f;
    if (this.state === State.StartNotDetected) this.dataBufStartFrame = Math.max(this.dataBufStartFrame, f);
  }

  private onVoiceDetected(f: number): void {
    this.latestConfirmedSpeechFrame = f;
    this.popToOutput(f, false, false);
  }

  private onVoiceStart(f: number): void {
    if (this.confirmedStartFrame === -1) this.confirmedStartFrame = f;
    if (this.state === State.StartNotDetected) this.popToOutput(this.confirmedStartFrame, true, false);
  }

  private onVoiceEnd(f: number): void {
    for (let g = this.latestConfirmedSpeechFrame + 1; g < f; g++) this.onVoiceDetected(g);
    if (this.confirmedEndFrame === -1) this.confirmedEndFrame = f;
    this.popToOutput(this.confirmedEndFrame, false, true);
    this.endTimesDetected++;
  }

  /** PopDataToOutputBuf for one frame: opens a segment at a start point, else extends the last one to the frame's end. */
  private popToOutput(f: number, isStart: boolean, isEnd: boolean): void {
    this.dataBufStartFrame = Math.max(this.dataBufStartFrame, f) + 1;
    if (this.output.length === 0 || isStart) this.output.push({ startMs: f * this.o.frameInMs, endMs: f * this.o.frameInMs, hasStart: false, hasEnd: false });
    const segment = this.output[this.output.length - 1];
    segment.endMs = (f + 1) * this.o.frameInMs;
    if (isStart) segment.hasStart = true;
    if (isEnd) segment.hasEnd = true;
  }

  /** What FunASR's __call__ with online=True returns after a chunk. */
  private boundaries(): VadBoundary[] {
    const out: VadBoundary[] = [];
    while (this.reported < this.output.length) {
      const s = this.output[this.reported];
      if (!s.hasStart) {
        this.reported++;
        continue;
      }
      if (!this.startReported) {
        out.push({ kind: 'start', ms: s.startMs });
        this.startReported = true;
      }
      if (!s.hasEnd) break;
      out.push({ kind: 'end', ms: s.endMs });
      this.startReported = false;
      this.reported++;
    }
    return out;
  }
}
