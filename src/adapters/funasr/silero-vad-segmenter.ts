import type { BackendSession } from '../../backends/backend.js';
import type { Tensor } from '../../spec/tensor.js';
import { FUNASR_SAMPLE_RATE } from './funasr-recognizer.js';
import type { StreamingVad, VadEvent } from './streaming-vad.js';

/** At 16 kHz Silero v5 reads 512-sample windows, each preceded by the previous window's last 64 samples. */
export const SILERO_WINDOW_SAMPLES = 512;
const CONTEXT_SAMPLES = 64;
const STATE_SIZE = 128;
/** The model's `sr` input, the same for every window; sessions only read their inputs, so one is shared. */
const SAMPLE_RATE_TENSOR: Tensor = { name: 'sr', datatype: 'INT64', shape: [], data: BigInt64Array.of(BigInt(FUNASR_SAMPLE_RATE)) };

export interface VadSegmenterOptions {
  /** Speech starts when a window's probability reaches this. */
  readonly threshold: number;
  /** Speech ends only below this (hysteresis); Silero uses threshold - 0.15. */
  readonly negThreshold: number;
  /** A segment is announced once speech has lasted this long; shorter bursts are ignored. */
  readonly minSpeechMs: number;
  /** Silence must last this long to end a segment: an end-of-utterance pause, longer than a pause between words. */
  readonly minSilenceMs: number;
  /** Added before each segment and after it (never overlapping the previous one). */
  readonly speechPadMs: number;
  /** Longer speech is cut into segments of this length, so a recognizer never gets unbounded audio. */
  readonly maxSpeechMs: number;
}

export const DEFAULT_VAD_SEGMENTER_OPTIONS: VadSegmenterOptions = {
  threshold: 0.5,
  negThreshold: 0.35,
  minSpeechMs: 250,
  minSilenceMs: 500,
  speechPadMs: 30,
  maxSpeechMs: 60_000,
};

/**
 * Streaming Silero VAD v5 for one audio stream: the recurrent state and the 64-sample context are
 * carried from window to window, and Silero's get_speech_timestamps rules (threshold with
 * hysteresis, minimum silence, minimum speech, padding) are applied as windows arrive, so a
 * segment's end is known `minSilenceMs` after the speech stops.
 */
export class SileroVadSegmenter implements StreamingVad {
  readonly #session: BackendSession;
  readonly #options: VadSegmenterOptions;
  readonly #minSpeech: number;
  readonly #minSilence: number;
  readonly #pad: number;
  readonly #maxSpeech: number;
  #state: Float32Array = new Float32Array(2 * STATE_SIZE);
  #context = new Float32Array(CONTEXT_SAMPLES);
  #pending = new Float32Array(0);
  #windows = 0;
  #received = 0;
  /** Onset of the speech being tracked (unpadded), announced or not. */
  #speechFrom: number | undefined;
  /** Start of the announced segment (padded); undefined while none is open. */
  #segmentFrom: number | undefined;
  #silenceFrom: number | undefined;
  #lastEnd = 0;

  constructor(session: BackendSession, options: Partial<VadSegmenterOptions> = {}) {
    this.#session = session;
    this.#options = { ...DEFAULT_VAD_SEGMENTER_OPTIONS, ...options };
    const samples = (ms: number): number => Math.round((ms * FUNASR_SAMPLE_RATE) / 1000);
    this.#minSpeech = samples(this.#options.minSpeechMs);
    this.#minSilence = samples(this.#options.minSilenceMs);
    this.#pad = samples(this.#options.speechPadMs);
    this.#maxSpeech = samples(this.#options.maxSpeechMs);
  }

  get processedSamples(): number {
    return Math.min(this.#windows * SILERO_WINDOW_SAMPLES, this.#received);
  }

  async push(samples: Float32Array): Promise<readonly VadEvent[]> {
    this.#received += samples.length;
    const all = new Float32Array(this.#pending.length + samples.length);
    all.set(this.#pending);
    all.set(samples, this.#pending.length);
    const whole = all.length - (all.length % SILERO_WINDOW_SAMPLES);
    this.#pending = all.slice(whole);
    const events: VadEvent[] = [];
    for (let at = 0; at < whole; at += SILERO_WINDOW_SAMPLES) {
      this.#step(await this.#probability(all.subarray(at, at + SILERO_WINDOW_SAMPLES)), events);
    }
    return events;
  }

  async finish(): Promise<readonly VadEvent[]> {
    const events: VadEvent[] = [];
    if (this.#pending.length > 0) {
      const last = new Float32Array(SILERO_WINDOW_SAMPLES);
      last.set(this.#pending);
      this.#pending = new Float32Array(0);
      this.#step(await this.#probability(last), events);
    }
    if (this.#segmentFrom !== undefined) {
      const end = this.#silenceFrom === undefined ? this.#received : Math.min(this.#received, this.#silenceFrom + this.#pad);
      events.push({ kind: 'end', sample: end });
      this.#segmentFrom = undefined;
    }
    this.#speechFrom = undefined;
    return events;
  }

  async #probability(window: Float32Array): Promise<number> {
    const input = new Float32Array(CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES);
    input.set(this.#context);
    input.set(window, CONTEXT_SAMPLES);
    this.#context = window.slice(SILERO_WINDOW_SAMPLES - CONTEXT_SAMPLES);
    const outputs = await this.#session.run({
      input: { name: 'input', datatype: 'FP32', shape: [1, input.length], data: input },
      state: { name: 'state', datatype: 'FP32', shape: [2, 1, STATE_SIZE], data: this.#state },
      sr: SAMPLE_RATE_TENSOR,
    });
    this.#state = outputs.stateN.data as Float32Array;
    return (outputs.output.data as Float32Array)[0];
  }

  /** get_speech_timestamps' loop body for window `#windows`, announcing segments as they are decided. */
  #step(p: number, events: VadEvent[]): void {
    const at = this.#windows * SILERO_WINDOW_SAMPLES;
    const after = Math.min(at + SILERO_WINDOW_SAMPLES, this.#received);
    this.#windows++;
    if (p >= this.#options.threshold) {
      this.#silenceFrom = undefined;
      this.#speechFrom ??= at;
    } else if (p < this.#options.negThreshold && this.#speechFrom !== undefined) {
      this.#silenceFrom ??= at;
      if (after - this.#silenceFrom >= this.#minSilence) {
        if (this.#segmentFrom !== undefined) this.#close(Math.min(this.#silenceFrom + this.#pad, after), events);
        this.#speechFrom = undefined;
        this.#silenceFrom = undefined;
        return;
      }
    }
    if (this.#speechFrom === undefined) return;
    if (this.#segmentFrom === undefined && (this.#silenceFrom ?? after) - this.#speechFrom >= this.#minSpeech) {
      this.#segmentFrom = Math.max(this.#lastEnd, this.#speechFrom - this.#pad, 0);
      events.push({ kind: 'start', sample: this.#segmentFrom });
    }
    if (this.#segmentFrom !== undefined && after - this.#segmentFrom >= this.#maxSpeech) {
      this.#close(after, events);
      this.#speechFrom = after;
      this.#segmentFrom = after;
      events.push({ kind: 'start', sample: after });
    }
  }

  #close(end: number, events: VadEvent[]): void {
    events.push({ kind: 'end', sample: end });
    this.#lastEnd = end;
    this.#segmentFrom = undefined;
  }
}
