import { argmax } from './sensevoice-decoder.js';
import { sentencePostprocess, type Sentence, type Span } from './sentence-postprocess.js';

/**
 * Paraformer's output to tokens, as funasr_onnx's Paraformer.decode_one: argmax per output
 * position, ids 0 (blank) and 2 (eos) dropped, the rest mapped through tokens.json and cut to
 * `token_num − predictor_bias`. Only the row's own `token_num` positions are read, so padding a
 * batch to its longest row changes nothing (funasr_onnx reads the padded ones too).
 */
export function paraformerTokens(logits: Float32Array, vocab: number, tokenNum: number, predictorBias: number, tokens: readonly string[]): string[] {
  const out: string[] = [];
  for (let n = 0; n < tokenNum; n++) {
    const id = argmax(logits, n * vocab, vocab);
    if (id !== 0 && id !== 2) out.push(tokens[id] ?? '<unk>');
  }
  return out.slice(0, Math.max(0, tokenNum - predictorBias));
}

/** One ms span per token. */
export interface TimedSentence extends Sentence {
  /** `[[start_ms, end_ms], ...]` per token, as the C++ server's `timestamp` field carries them. */
  readonly tokenSpans: readonly Span[];
}

/**
 * BiCifParaformer's timestamps (funasr_onnx/utils/timestamp_utils.py, time_stamp_lfr6_onnx): a
 * token starts where the upsampled CIF fires (peak > 1 − 1e−4, shifted by −1.5 frames of 20 ms) and
 * lasts to the next firing, at most 30 frames; silence before the first and after the last is cut
 * off. `peaks` is the row's own `us_cif_peak`, 3 × its LFR frames long, not the batch's padding.
 * Returns undefined when the peaks do not number tokens + 1 (FunASR asserts they do).
 */
export function cifTimestamps(peaks: Float32Array, tokenCount: number): Span[] | undefined {
  if (tokenCount === 0) return [];
  const START_END_THRESHOLD = 5;
  const MAX_TOKEN_DURATION = 30;
  const TIME_RATE = (10 * 6) / 1000 / 3;
  const fires: number[] = [];
  for (let i = 0; i < peaks.length; i++) if (peaks[i] > 1 - 1e-4) fires.push(i - 1.5);
  if (fires.length !== tokenCount + 1) return undefined;
  const frames = peaks.length;
  const spans: { token: boolean; start: number; end: number }[] = [];
  for (let i = 0; i < fires.length - 1; i++) {
    if (i === fires.length - 2 || fires[i + 1] - fires[i] < MAX_TOKEN_DURATION) {
      spans.push({ token: true, start: fires[i] * TIME_RATE, end: fires[i + 1] * TIME_RATE });
    } else {
      const split = fires[i] + MAX_TOKEN_DURATION;
      spans.push({ token: true, start: fires[i] * TIME_RATE, end: split * TIME_RATE }, { token: false, start: split * TIME_RATE, end: fires[i + 1] * TIME_RATE });
    }
  }
  const last = fires[fires.length - 1];
  const tail = spans[spans.length - 1];
  tail.end = (frames - last > START_END_THRESHOLD ? (frames + last) / 2 : frames) * TIME_RATE;
  // Python's int() truncates toward zero.
  return spans.filter((s) => s.token).map((s) => [Math.trunc(s.start * 1000), Math.trunc(s.end * 1000)] as const);
}

/** Tokens (and their spans) to FunASR's sentence. */
export function paraformerSentence(tokens: readonly string[], spans?: readonly Span[]): TimedSentence {
  const sentence = sentencePostprocess(tokens, spans);
  return { ...sentence, tokenSpans: spans ?? [] };
}
