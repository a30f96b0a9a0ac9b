import type { BackendSession } from '../backends/backend.js';
import { createError } from '../errors/index.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import { cifTimestamps, paraformerSentence, paraformerTokens } from './paraformer-decoder.js';
import { decodeSenseVoice, SENSEVOICE_LANGUAGES, SENSEVOICE_TEXTNORM, tagName } from './sensevoice-decoder.js';
import { SpeechFrontEnd, type SpeechFeatures } from './speech-front-end.js';
import type { SpeechFolder } from './speech-folder.js';
import type { Transcription, TranscribeOptions } from './transcription.js';

/** One utterance to transcribe: 16 kHz mono samples and the caller's options. */
export interface Utterance extends TranscribeOptions {
  readonly samples: Float32Array;
  /** Seconds of the audio as sent (before resampling). */
  readonly duration: number;
}

/**
 * A FunASR export's model run on a batch of whole utterances: the front end per utterance, one
 * forward pass over the batch padded with zeros to its longest, then each row decoded over its
 * own length only, so an utterance transcribes the same alone or in any batch. Runs inside an
 * instance's thread (speech-instance-model.ts), and in-process for the benchmark.
 */
export class SpeechRecognizer {
  private readonly frontEnd: SpeechFrontEnd;
  /** BiCifParaformer's export has us_cif_peak among its outputs. */
  private readonly timestamps: boolean;
  /**
   * A compiled .om's fixed frames axis of `speech` (ATC fixes every dim but the batch's gears):
   * every row is padded to it, `speech_lengths` carrying its own length, which the encoder masks by.
   */
  readonly compiledFrames?: number;

  constructor(
    readonly folder: SpeechFolder,
    private readonly session: BackendSession,
  ) {
    this.frontEnd = new SpeechFrontEnd(folder.frontEnd, folder.cmvn);
    const outputs = session.metadata().outputs.map((o) => o.name);
    const inputs = session.metadata().inputs.map((i) => i.name);
    const need = folder.kind === 'SenseVoiceSmall' ? { inputs: ['speech', 'speech_lengths', 'language', 'textnorm'], outputs: ['ctc_logits', 'encoder_out_lens'] } : { inputs: ['speech', 'speech_lengths'], outputs: ['logits', 'token_num'] };
    const missing = [...need.inputs.filter((n) => !inputs.includes(n)), ...need.outputs.filter((n) => !outputs.includes(n))];
    if (missing.length > 0) throw createError('SF_ERR_SPEECH_FOLDER_INVALID', folder.dir, `its ${folder.modelFile} is not a ${folder.kind} export: it lacks ${missing.join(', ')} (funasr/models/*/export_meta.py names them)`);
    this.timestamps = folder.kind === 'BiCifParaformer' || outputs.includes('us_cif_peak');
    const frames = session.metadata().inputs.find((i) => i.name === 'speech')?.shape[1];
    if (frames !== undefined && frames > 0) this.compiledFrames = frames;
  }

  /** An utterance's LFR frames, from its sample count alone (to refuse one over compiledFrames before the batch runs). */
  frameCount(samples: number): number {
    return this.frontEnd.frameCount(samples);
  }

  /** The longest audio, in seconds, that compiledFrames holds. */
  get compiledSeconds(): number | undefined {
    return this.compiledFrames === undefined ? undefined : this.frontEnd.secondsOfFrames(this.compiledFrames);
  }

  async transcribe(utterances: readonly Utterance[]): Promise<Transcription[]> {
    const features = utterances.map((u) => this.frontEnd.compute(u.samples));
    // Audio under one 25 ms frame has no features: nothing to say, and nothing to run.
    const rows = features.map((f, i) => ({ f, i })).filter(({ f }) => f.frames > 0);
    const out: Transcription[] = utterances.map((u) => ({ text: '', richText: '', duration: u.duration }));
    if (rows.length === 0) return out;
    const decoded = this.folder.kind === 'SenseVoiceSmall'
      ? await this.senseVoice(rows.map(({ f }) => f), rows.map(({ i }) => utterances[i]))
      : await this.paraformer(rows.map(({ f }) => f));
    rows.forEach(({ i }, r) => (out[i] = { ...decoded[r], duration: utterances[i].duration }));
    return out;
  }

  private async senseVoice(features: readonly SpeechFeatures[], utterances: readonly Utterance[]): Promise<Omit<Transcription, 'duration'>[]> {
    const language = Int32Array.from(utterances, (u) => languageId(u.language));
    const textnorm = Int32Array.from(utterances, (u) => (u.itn === false ? SENSEVOICE_TEXTNORM.woitn : SENSEVOICE_TEXTNORM.withitn));
    const produced = await this.session.run({ ...this.speechInputs(features), language: createTensor('language', 'INT32', [features.length], language), textnorm: createTensor('textnorm', 'INT32', [features.length], textnorm) }, ['ctc_logits', 'encoder_out_lens']);
    const { data, shape } = float32(produced.ctc_logits, 'ctc_logits');
    const lengths = produced.encoder_out_lens.data as Int32Array;
    const [, frames, vocab] = shape;
    return features.map((_, b) => {
      const row = data.subarray(b * frames * vocab, (b + 1) * frames * vocab);
      const result = decodeSenseVoice(row, vocab, Math.min(Number(lengths[b]), frames), this.folder.tokens);
      return {
        text: result.text, richText: result.richText,
        language: tagName(result.language), emotion: tagName(result.emotion), event: tagName(result.event), itn: tagName(result.itn),
      };
    });
  }

  private async paraformer(features: readonly SpeechFeatures[]): Promise<Omit<Transcription, 'duration'>[]> {
    const wanted = this.timestamps ? ['logits', 'token_num', 'us_cif_peak'] : ['logits', 'token_num'];
    const produced = await this.session.run(this.speechInputs(features), wanted);
    const { data, shape } = float32(produced.logits, 'logits');
    const tokenNums = produced.token_num.data as Int32Array;
    const [, positions, vocab] = shape;
    const peaks = this.timestamps ? float32(produced.us_cif_peak, 'us_cif_peak') : undefined;
    return features.map((f, b) => {
      const row = data.subarray(b * positions * vocab, (b + 1) * positions * vocab);
      const tokens = paraformerTokens(row, vocab, Math.min(Number(tokenNums[b]), positions), this.folder.predictorBias, this.folder.tokens);
      if (!peaks) {
        const { text } = paraformerSentence(tokens);
        return { text, richText: text };
      }
      // The row's own upsampled frames: 3 per LFR frame, not the batch's padded length.
      const width = peaks.shape[1];
      const spans = cifTimestamps(peaks.data.subarray(b * width, b * width + Math.min(width, 3 * f.frames)), tokens.length);
      const sentence = paraformerSentence(tokens, spans);
      const words = sentence.spans?.map((s, w) => ({ word: sentence.words[w], start: s[0] / 1000, end: s[1] / 1000 }));
      return { text: sentence.text, richText: sentence.text, ...(spans ? { timestamp: spans, words } : {}) };
    });
  }

  /** `speech` [B, T, dim] zero-padded to the longest row (a compiled .om: to its frames), and `speech_lengths` [B]. */
  private speechInputs(features: readonly SpeechFeatures[]): Record<string, Tensor> {
    const dim = this.frontEnd.dim;
    const own = Math.max(...features.map((f) => f.frames));
    if (this.compiledFrames !== undefined && own > this.compiledFrames) throw new Error(`an utterance of ${own} frames reached a model compiled for ${this.compiledFrames}`);
    const longest = this.compiledFrames ?? own;
    const speech = new Float32Array(features.length * longest * dim);
    features.forEach((f, b) => speech.set(f.data, b * longest * dim));
    return {
      speech: createTensor('speech', 'FP32', [features.length, longest, dim], speech),
      speech_lengths: createTensor('speech_lengths', 'INT32', [features.length], Int32Array.from(features, (f) => f.frames)),
    };
  }
}

/** svs_lang / OpenAI's `language` to SenseVoice's query id; an unknown code is a 400 naming the known ones. */
export function languageId(language: string | undefined): number {
  if (language === undefined || language === '') return SENSEVOICE_LANGUAGES.auto;
  const id = SENSEVOICE_LANGUAGES[language.toLowerCase()];
  if (id === undefined) throw createError('SF_ERR_AUDIO_INVALID', `language '${language}' is not one SenseVoice knows (${Object.keys(SENSEVOICE_LANGUAGES).join(', ')})`);
  return id;
}

function float32(tensor: Tensor | undefined, name: string): { data: Float32Array; shape: readonly number[] } {
  if (!tensor || !(tensor.data instanceof Float32Array)) throw new Error(`the model's ${name} output is not FP32`);
  return { data: tensor.data, shape: tensor.shape };
}
