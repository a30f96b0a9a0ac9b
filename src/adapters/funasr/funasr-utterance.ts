import type { FunAsrMode, FunAsrReply, FunAsrReplyMode } from './funasr-message.js';
import { FUNASR_SAMPLE_RATE, type FunAsrRecognizer, type Hotword, type RecognitionPass, type RecognitionResult } from './funasr-recognizer.js';
import { Pcm16Decoder } from './pcm16-decoder.js';
import type { StreamingVad, VadEvent } from './streaming-vad.js';

/** What the configuration frame settles for one utterance. */
export interface UtteranceConfig {
  readonly mode: FunAsrMode;
  readonly wavName: string;
  readonly chunkSize: readonly [number, number, number];
  readonly hotwords: readonly Hotword[];
  readonly itn: boolean;
  readonly svsLang?: string;
  readonly svsItn?: boolean;
}

/** FunASR's chunk_size unit: [5, 10, 5] means 600 ms chunks. */
const CHUNK_UNIT_MS = 60;
/**
 * Audio kept while no segment is open: a VAD start points back by the minimum speech, the padding
 * and a window or two, well under this.
 */
const LOOKBACK_SAMPLES = 3 * FUNASR_SAMPLE_RATE;

interface OpenSegment {
  readonly index: number;
  readonly start: number;
  /** Where the next online chunk begins. */
  cursor: number;
}

/**
 * One utterance of a FunASR session, from the configuration frame to `{"is_speaking": false}`:
 * audio goes through the VAD; while a segment is open, every chunk_size[1] × 60 ms of it goes to
 * the online pass (modes online and 2pass); when it closes, the whole segment goes to the offline
 * pass (modes offline and 2pass). As in FunASR's servers, replies with empty text are not sent,
 * and in 2pass the online text of a segment's last chunk is dropped, the offline text replacing it.
 */
export class Utterance {
  readonly #config: UtteranceConfig;
  readonly #recognizer: FunAsrRecognizer;
  readonly #vad: StreamingVad;
  readonly #pcm = new Pcm16Decoder();
  readonly #chunkSamples: number;
  #audio = new Float32Array(FUNASR_SAMPLE_RATE);
  /** Stream position of #audio[0]. */
  #base = 0;
  #end = 0;
  #segment: OpenSegment | undefined;
  #segmentCount = 0;

  constructor(config: UtteranceConfig, recognizer: FunAsrRecognizer, vad: StreamingVad) {
    this.#config = config;
    this.#recognizer = recognizer;
    this.#vad = vad;
    this.#chunkSamples = (config.chunkSize[1] * CHUNK_UNIT_MS * FUNASR_SAMPLE_RATE) / 1000;
  }

  async accept(frame: Uint8Array): Promise<FunAsrReply[]> {
    const samples = this.#pcm.decode(frame);
    if (samples.length === 0) return [];
    this.#append(samples);
    const events = await this.#vad.push(samples);
    return this.#advance(events, this.#vad.processedSamples);
  }

  /** The end frame: closes the open segment; the last reply is final, an empty one if nothing is left to say. */
  async finish(acknowledgeEnd: boolean): Promise<FunAsrReply[]> {
    const replies = await this.#advance(await this.#vad.finish(), this.#end);
    const last = replies.pop() ?? this.#reply('offline', { text: '' }, 0);
    return [...replies, { ...last, is_final: true, ...(acknowledgeEnd ? { is_end: true as const } : {}) }];
  }

  async #advance(events: readonly VadEvent[], processed: number): Promise<FunAsrReply[]> {
    const replies: FunAsrReply[] = [];
    for (const event of events) {
      if (event.kind === 'start') {
        const start = Math.max(event.sample, this.#base);
        this.#segment = { index: this.#segmentCount++, start, cursor: start };
      } else if (this.#segment) {
        await this.#online(replies, this.#segment, event.sample, true);
        await this.#offline(replies, this.#segment, event.sample);
        this.#segment = undefined;
      }
    }
    if (this.#segment) await this.#online(replies, this.#segment, processed, false);
    this.#discardOld();
    return replies;
  }

  async #online(replies: FunAsrReply[], segment: OpenSegment, until: number, closing: boolean): Promise<void> {
    if (this.#config.mode === 'offline') return;
    for (;;) {
      const size = Math.max(0, Math.min(this.#chunkSamples, until - segment.cursor));
      const final = closing && segment.cursor + size >= until;
      if (size < this.#chunkSamples && !final) return;
      const result = await this.#recognize('online', segment, segment.cursor, segment.cursor + size, final);
      if (!(final && this.#config.mode === '2pass')) this.#push(replies, this.#reply('online', result, segment.cursor));
      segment.cursor += size;
      if (final) return;
    }
  }

  async #offline(replies: FunAsrReply[], segment: OpenSegment, end: number): Promise<void> {
    if (this.#config.mode === 'online') return;
    this.#push(replies, this.#reply('offline', await this.#recognize('offline', segment, segment.start, end, true), segment.start));
  }

  #recognize(pass: RecognitionPass, segment: OpenSegment, from: number, to: number, final: boolean): Promise<RecognitionResult> {
    const audio = this.#audio.slice(from - this.#base, Math.max(from, to) - this.#base);
    const { hotwords, itn, chunkSize, wavName, svsLang, svsItn } = this.#config;
    return this.#recognizer.recognize(audio, { pass, final, segment: segment.index, startMs: toMs(from), hotwords, itn, chunkSize, wavName, svsLang, svsItn });
  }

  #push(replies: FunAsrReply[], reply: FunAsrReply): void {
    if (reply.text !== '') replies.push(reply);
  }

  #reply(pass: RecognitionPass, result: RecognitionResult, from: number): FunAsrReply {
    const reply = { mode: replyMode(this.#config.mode, pass), text: result.text, wav_name: this.#config.wavName, is_final: false };
    if (!result.timestamp) return reply;
    const shift = toMs(from);
    const stampSents = result.stampSents?.map((s) => ({ ...s, start: s.start + shift, end: s.end + shift, ts_list: s.ts_list.map(([a, b]) => [a + shift, b + shift] as const) }));
    return { ...reply, timestamp: JSON.stringify(result.timestamp.map(([a, b]) => [a + shift, b + shift])), ...(stampSents ? { stamp_sents: stampSents } : {}) };
  }

  #append(samples: Float32Array): void {
    const used = this.#end - this.#base;
    if (used + samples.length > this.#audio.length) {
      const grown = new Float32Array(Math.max(2 * this.#audio.length, used + samples.length));
      grown.set(this.#audio.subarray(0, used));
      this.#audio = grown;
    }
    this.#audio.set(samples, used);
    this.#end += samples.length;
  }

  /** Keeps the open segment, or the look-back, so a long stream holds bounded memory. */
  #discardOld(): void {
    const keepFrom = this.#segment ? this.#segment.start : this.#end - LOOKBACK_SAMPLES;
    const drop = keepFrom - this.#base;
    // Shifting costs a copy of what is kept, so it waits until a second's worth can go.
    if (drop < FUNASR_SAMPLE_RATE) return;
    this.#audio.copyWithin(0, drop, this.#end - this.#base);
    this.#base = keepFrom;
  }
}

function replyMode(mode: FunAsrMode, pass: RecognitionPass): FunAsrReplyMode {
  return mode === '2pass' ? `2pass-${pass}` : mode;
}

function toMs(sample: number): number {
  return Math.round((sample * 1000) / FUNASR_SAMPLE_RATE);
}
