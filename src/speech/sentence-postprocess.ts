/**
 * FunASR's sentence_postprocess (runtime/python/onnxruntime/funasr_onnx/utils/postprocess_utils.py):
 * tokens to a sentence. Chinese characters (and digits, which it counts with them) join without
 * spaces; English BPE pieces ending in `@@` join the next piece; whole words are separated by
 * spaces; runs of single letters become an upper-case abbreviation (abbr_dispose). With timestamps,
 * each word gets the span from its first piece's start to its last piece's end, and the sentence
 * joins words with spaces, as FunASR's does.
 */
export type Span = readonly [number, number];

export interface Sentence {
  readonly text: string;
  readonly words: readonly string[];
  /** Per word, when token spans were given. */
  readonly spans?: readonly Span[];
}

const DROPPED = new Set(['<s>', '</s>', '<unk>']);

function isChinese(word: string): boolean {
  // Python's string comparison in isChinese decides on the first character.
  const c = word.codePointAt(0) ?? 0;
  return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x30 && c <= 0x39);
}

function isAlpha(word: string): boolean {
  const w = word.replaceAll(' ', '');
  return w === "'" || (/^\p{L}+$/u.test(w) && !isChinese(w));
}

export function sentencePostprocess(tokens: readonly string[], spans?: readonly Span[]): Sentence {
  const words: string[] = [];
  const wordSpans: Span[] = [];
  const kept = tokens.map((t, i) => ({ t, span: spans?.[i] })).filter(({ t }) => !DROPPED.has(t));
  let item = '';
  let itemStart: number | undefined;
  let alphaBlank = false;
  for (const { t, span } of kept) {
    if (isChinese(t.replaceAll(' ', ''))) {
      if (alphaBlank) words.pop();
      words.push(t.replaceAll(' ', ''));
      if (span) wordSpans.push(span);
      alphaBlank = false;
    } else if (t.includes('@@')) {
      item += t.replaceAll('@@', '');
      itemStart ??= span?.[0];
      alphaBlank = false;
    } else {
      // An alphabetic word, or a piece FunASR's mixed branch would reject: kept as a word.
      words.push(item + t, ' ');
      if (span) wordSpans.push([itemStart ?? span[0], span[1]]);
      item = '';
      itemStart = undefined;
      alphaBlank = true;
    }
  }
  const { merged, mergedSpans } = abbreviations(words, spans ? wordSpans : undefined);
  const real = merged.filter((w) => w !== ' ');
  const text = (spans ? real.join(' ') : merged.join('')).trim();
  return { text, words: real, ...(mergedSpans ? { spans: mergedSpans } : {}) };
}

/** abbr_dispose: single letters separated by single spaces become one upper-case word. */
function abbreviations(words: readonly string[], spans?: readonly Span[]): { merged: string[]; mergedSpans?: Span[] } {
  const merged: string[] = [];
  const mergedSpans: Span[] = [];
  const letter = (w: string | undefined): boolean => w !== undefined && /^[A-Za-z]$/.test(w);
  let spanIndex = 0;
  for (let i = 0; i < words.length; ) {
    if (letter(words[i]) && words[i + 1] === ' ' && letter(words[i + 2])) {
      let j = i;
      let abbr = '';
      const first = spanIndex;
      while (letter(words[j])) {
        abbr += words[j].toUpperCase();
        spanIndex++;
        if (words[j + 1] === ' ' && letter(words[j + 2])) j += 2;
        else {
          j += 1;
          break;
        }
      }
      merged.push(abbr);
      if (spans) mergedSpans.push([spans[first][0], spans[spanIndex - 1][1]]);
      i = j;
    } else {
      merged.push(words[i]);
      if (words[i] !== ' ') {
        if (spans) mergedSpans.push(spans[spanIndex]);
        spanIndex++;
      }
      i++;
    }
  }
  return spans ? { merged, mergedSpans } : { merged };
}
