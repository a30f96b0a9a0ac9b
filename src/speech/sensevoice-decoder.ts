/**
 * SenseVoiceSmall's CTC greedy search as FunASR's C++ runtime runs it (runtime/onnxruntime/src/
 * sensevoice-small.cpp, CTCSearch): argmax per frame over the row's own `encoder_out_lens` frames
 * only (so a row decodes the same in any batch; FunASR's Triton scorer, which collapses the padded
 * batch as one, does not), repeats collapsed, blank 0 dropped. The first four tokens are the
 * language, emotion, event and text-normalisation tags the model's four query frames decode to.
 */

/** SenseVoice's `language` input ids (funasr/models/sense_voice/export_meta.py, lid_dict). */
export const SENSEVOICE_LANGUAGES: Readonly<Record<string, number>> = Object.freeze({ auto: 0, zh: 3, en: 4, yue: 7, ja: 11, ko: 12, nospeech: 13 });
/** Its `textnorm` input ids: with inverse text normalisation (punctuation, digits) or without. */
export const SENSEVOICE_TEXTNORM = Object.freeze({ withitn: 14, woitn: 15 });

const BLANK_ID = 0;
/** SentencePiece's word-start mark, which the C++ runtime turns into a space. */
const WORD_START = '▁';

export interface SenseVoiceResult {
  /** The words, without tags; with ITN, ending in `。` (zh) or `.` as the C++ runtime appends. */
  readonly text: string;
  /** `<|en|>`, `<|NEUTRAL|>`, `<|Speech|>`, `<|woitn|>`: empty when the row decoded fewer than four tokens. */
  readonly language: string;
  readonly emotion: string;
  readonly event: string;
  readonly itn: string;
  /** The C++ runtime's result string: language + emotion + event + " " + words. */
  readonly richText: string;
}

/** Decodes one row of `ctc_logits` ([frames, vocab], row-major) over its first `length` frames. */
export function decodeSenseVoice(logits: Float32Array, vocab: number, length: number, tokens: readonly string[]): SenseVoiceResult {
  const ids: number[] = [];
  let previous = -1;
  for (let t = 0; t < length; t++) {
    const id = argmax(logits, t * vocab, vocab);
    if (id !== BLANK_ID && id !== previous) ids.push(id);
    previous = id;
  }
  const piece = (id: number): string => tokens[id] ?? '';
  const [language, emotion, event, itn] = ids.length >= 4 ? ids.slice(0, 4).map(piece) : ['', '', '', ''];
  let words = '';
  for (const id of ids.slice(4)) {
    const p = piece(id);
    words += p.includes(WORD_START) ? ` ${p.slice(p.indexOf(WORD_START) + 1)}` : p;
  }
  if (itn === '<|withitn|>') words += language === '<|zh|>' ? '。' : '.';
  return { text: words.trim(), language, emotion, event, itn, richText: `${language}${emotion}${event} ${words}` };
}

/** The tag's language code: `<|en|>` → `en`; undefined for none. */
export function tagName(tag: string): string | undefined {
  const match = /^<\|(.+)\|>$/.exec(tag);
  return match?.[1];
}

export function argmax(values: Float32Array, offset: number, count: number): number {
  let best = 0;
  let bestValue = values[offset];
  for (let i = 1; i < count; i++) {
    if (values[offset + i] > bestValue) {
      bestValue = values[offset + i];
      best = i;
    }
  }
  return best;
}
