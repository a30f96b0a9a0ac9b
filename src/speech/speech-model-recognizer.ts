import type { FunAsrRecognizer, RecognizeOptions, RecognitionResult } from '../adapters/funasr/funasr-recognizer.js';
import { FUNASR_SAMPLE_RATE } from '../adapters/funasr/funasr-recognizer.js';
import type { SpeechModel } from './speech-model.js';

/** The models one FunASR session uses, as FunASR's 2pass server pairs them: a streaming one for online passes, an offline one for whole segments. */
export interface RecognizerModels {
  readonly online?: SpeechModel;
  readonly offline?: SpeechModel;
}

/**
 * FunASR's WebSocket adapter's recognizer over served speech models; one per connection, since a
 * streaming model's stream is a sequence it opens and closes. Each online pass (a chunk of the open
 * segment) is a request of that segment's sequence to the streaming model, which keeps the stream's
 * state in its instance; each offline pass (a whole segment) is one request through the offline
 * model's queue and batcher. Audio goes as 16-bit PCM, which the client's frames were. The text is
 * what FunASR's C++ server sends: SenseVoice's tags before the words. Without a streaming model,
 * online passes answer no text, so a 2pass client gets its 2pass-offline results only.
 */
export class SpeechModelRecognizer implements FunAsrRecognizer {
  private stream?: { readonly id: string; readonly segment: number };

  constructor(
    private readonly models: RecognizerModels,
    /**
     * The connection's: aborts its offline passes still queued when the client goes away. A stream's
     * chunks are not aborted: each is a request of its sequence, which release() ends in order.
     */
    private readonly signal?: AbortSignal,
  ) {}

  async recognize(audio: Float32Array, options: RecognizeOptions): Promise<RecognitionResult> {
    if (options.pass === 'online') return this.online(audio, options);
    const model = this.models.offline;
    if (!model || audio.length === 0) return { text: '' };
    const request = { audio: pcm16(audio), sampleRate: FUNASR_SAMPLE_RATE, language: options.svsLang, itn: options.svsItn ?? options.itn, signal: this.signal };
    // A VAD segment (or the whole utterance): through the chain's punctuation when one is served, not its VAD again.
    const result = await (model.chain ? model.chain.segment(model, request) : model.transcribe(request));
    const text = model.folder.kind === 'SenseVoiceSmall' ? result.richText : result.text;
    return { text, ...(result.timestamp ? { timestamp: result.timestamp } : {}), ...(result.stampSents ? { stampSents: result.stampSents } : {}) };
  }

  /** A chunk of the open segment: the segment's first chunk STARTs its sequence, its final one ENDs it. */
  private async online(audio: Float32Array, options: RecognizeOptions): Promise<RecognitionResult> {
    const model = this.models.online;
    if (!model) return { text: '' };
    const start = this.stream?.segment !== options.segment;
    if (start) this.stream = { id: model.newSequenceId(), segment: options.segment };
    const { id } = this.stream!;
    // Cleared before the request goes: once submitted, its END has ended the sequence.
    if (options.final) this.stream = undefined;
    const result = await model.streamChunk({ sequenceId: id, start, end: options.final, pcm: pcm16(audio), chunkSize: options.chunkSize });
    return { text: result.text };
  }

  /**
   * The client went away with a segment's stream open: an empty END request ends its sequence, so the
   * streaming model's instance drops the stream's decoder state now (it decodes the look-ahead it
   * holds, at most one chunk's work, whose text nobody reads), rather than at the idle expiry.
   */
  async release(): Promise<void> {
    const open = this.stream;
    const model = this.models.online;
    if (!open || !model) return;
    this.stream = undefined;
    await model.streamChunk({ sequenceId: open.id, start: false, end: true, pcm: new Uint8Array(0) });
  }
}

function pcm16(audio: Float32Array): Uint8Array {
  const pcm = new Int16Array(audio.length);
  for (let i = 0; i < audio.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(audio[i] * 32768)));
  return new Uint8Array(pcm.buffer);
}
