/** One sentence of FunASR's `stamp_sents`: its words, the punctuation that ended it, its span and its words' spans, in ms. */
export interface StampSentence {
  readonly text_seg: string;
  readonly punc: string;
  readonly start: number;
  readonly end: number;
  readonly ts_list: readonly (readonly [number, number])[];
}

/** FunASR's TimestampIsPunctuation for a UTF-16 unit (runtime/onnxruntime/src/util.cpp): ASCII, general and CJK punctuation, but not & ' -. */
function splitsWords(c: number): boolean {
  if (c === 0x26 || c === 0x27 || c === 0x2d) return false;
  return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e) || (c >= 0x2000 && c <= 0x206f) || (c >= 0x3000 && c <= 0x303f);
}

/** Its string form, which ends a sentence: only ， 。 ？ 、 , ? (the C++ keeps `.` out). */
const SENTENCE_MARKS = new Set(['，', '。', '？', '、', ',', '?']);

/** TimestampSplitChiEngCharacters: each Chinese character, digit and punctuation mark alone, other runs split at spaces. */
function characters(text: string): string[] {
  const out: string[] = [];
  let word = '';
  const flush = (): void => {
    if (word !== '') out.push(word);
    word = '';
  };
  for (const c of text) {
    const code = c.charCodeAt(0);
    if (/\p{Script=Han}/u.test(c) || (code >= 0x30 && code <= 0x39) || splitsWords(code)) {
      flush();
      out.push(c);
    } else if (c === ' ') {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

/**
 * FunASR's TimestampSentence (runtime/onnxruntime/src/util.cpp), which its C++ servers send as
 * `stamp_sents`: the punctuated text split into characters and words, each given the next token
 * time in order; a punctuation mark closes a sentence with its span. Written out because it is
 * FunASR's own format. As in the C++, a sentence after the first with no times gets 0, not -1.
 */
export function stampSentences(text: string, timestamps: readonly (readonly [number, number])[]): StampSentence[] {
  const sentences: StampSentence[] = [];
  let words: string[] = [];
  let spans: (readonly [number, number])[] = [];
  let next = 0;
  let start = -1;
  let end = -1;
  const close = (punc: string): void => {
    if (spans.length > 0) {
      start = spans[0][0];
      end = spans[spans.length - 1][1];
    }
    sentences.push({ text_seg: words.join(' '), punc, start, end, ts_list: spans });
  };
  for (const c of characters(text)) {
    if (SENTENCE_MARKS.has(c)) {
      close(c);
      words = [];
      spans = [];
      start = 0;
      end = 0;
    } else if (next < timestamps.length) {
      words.push(c);
      spans.push(timestamps[next++]);
    }
  }
  if (spans.length > 0) close('');
  return sentences;
}
