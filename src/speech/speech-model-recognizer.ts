import type { FunAsrRecognizer, RecognizeOptions, RecognitionResult } from '../adapters/funasr/funasr-recognizer.js';
import { FUNASR_SAMPLE_RATE } from '../adapters/funasr/funasr-recognizer.js';
import type { SpeechModel } from './speech-model.js';

/**
 * FunASR's WebSocket adapter's recognizer over a served speech model: each offline pass (a whole
 * segment) is one request through the model's queue and batcher, sent as 16-bit PCM, which the
 * client's frames were. The text is what FunASR's C++ server sends: SenseVoice's tags before the
 * words. The offline models served so far have no streaming pass: online passes answer no text,
 * so a 2pass client gets its 2pass-offline results only.
 */
export class SpeechModelRecognizer implements FunAsrRecognizer {
  constructor(private readonly model: SpeechModel) {}

  async recognize(audio: Float32Array, options: RecognizeOptions): Promise<RecognitionResult> {
    if (options.pass === 'online' || audio.length === 0) return { text: '' };
    const pcm = new Int16Array(audio.length);
    for (let i = 0; i < audio.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(audio[i] * 32768)));
    const request = { audio: new Uint8Array(pcm.buffer), sampleRate: FUNASR_SAMPLE_RATE, language: options.svsLang, itn: options.svsItn ?? options.itn };
    // A VAD segment (or the whole utterance): through the chain's punctuation when one is served, not its VAD again.
    const result = await (this.model.chain ? this.model.chain.segment(this.model, request) : this.model.transcribe(request));
    const text = this.model.folder.kind === 'SenseVoiceSmall' ? result.richText : result.text;
    return { text, ...(result.timestamp ? { timestamp: result.timestamp } : {}), ...(result.stampSents ? { stampSents: result.stampSents } : {}) };
  }
}
