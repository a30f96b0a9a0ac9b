import type { BackendSession } from '../backends/backend.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { PunctuationFolder } from './speech-chain-folders.js';

/** FunASR's CT_Transformer window: 20 words per mini-sentence (`split_size`). */
export const PUNCTUATION_WINDOW = 20;
/** After this many words with no sentence end, the text is cut at its last comma (`cache_pop_trigger_limit`). */
const CARRY_LIMIT = 200;

/**
 * funasr_onnx's code_mix_split_words: the text split at white space, then each non-ASCII character
 * a word of its own and each run of ASCII characters one word. (With a `jieba_usr_dict` FunASR
 * segments Chinese with jieba instead; serve-fn does not, see docs/speech.md.)
 */
export function splitWords(text: string): string[] {
  const words: string[] = [];
  for (const part of text.split(/\s+/)) {
    let ascii = '';
    for (const c of part) {
      if (c.codePointAt(0)! < 0x80) {
        ascii += c;
        continue;
      }
      if (ascii !== '') words.push(ascii);
      ascii = '';
      words.push(c);
    }
    if (ascii !== '') words.push(ascii);
  }
  return words;
}

/** The model's punctuation id for each word of one window (argmax of its logits). */
export type PunctuateWindow = (ids: Int32Array) => Promise<Int32Array>;

/**
 * FunASR's CT_Transformer.__call__ (funasr_onnx/punc_bin.py), written out because it is FunASR's
 * own windowing: the words in windows of 20; each window is run with the words carried from the
 * last one in front; every window but the last keeps text up to its last `。` / `？` (searched from
 * its second-to-last word down to its third) and carries the rest, or, past 200 words with no
 * sentence end, cuts at its last comma made a period; ASCII words are joined with a space; the text
 * ends with `。` (a final `，` or `、` becomes one) unless it ends with `。` or `？`.
 */
export async function punctuateWords(words: readonly string[], ids: readonly number[], puncList: readonly string[], run: PunctuateWindow): Promise<string> {
  if (words.length === 0) return '';
  const period = Math.max(0, puncList.indexOf('。'));
  const windows: number[][] = [];
  for (let at = 0; at < words.length; at += PUNCTUATION_WINDOW) windows.push(Array.from({ length: Math.min(PUNCTUATION_WINDOW, words.length - at) }, (_, i) => at + i));
  let carried: number[] = [];
  let text = '';
  for (let w = 0; w < windows.length; w++) {
    let sentence = [...carried, ...windows[w]];
    let punctuation = Array.from(await run(Int32Array.from(sentence, (i) => ids[i])));
    if (w < windows.length - 1) {
      let end = -1;
      let lastComma = -1;
      for (let i = punctuation.length - 2; i > 1; i--) {
        const p = puncList[punctuation[i]];
        if (p === '。' || p === '？') {
          end = i;
          break;
        }
        if (lastComma < 0 && p === '，') lastComma = i;
      }
      if (end < 0 && sentence.length > CARRY_LIMIT && lastComma >= 0) {
        end = lastComma;
        punctuation[end] = period;
      }
      carried = sentence.slice(end + 1);
      sentence = sentence.slice(0, end + 1);
      punctuation = punctuation.slice(0, end + 1);
    }
    sentence.forEach((word, i) => {
      const previous = i > 0 ? words[sentence[i - 1]] : undefined;
      if (previous !== undefined && isAscii(words[word][0]) && isAscii(previous[0])) text += ' ';
      text += words[word];
      const p = puncList[punctuation[i]];
      if (p !== '_') text += p;
    });
  }
  const last = text.at(-1);
  if (last === '，' || last === '、') return `${text.slice(0, -1)}。`;
  return last === '。' || last === '？' ? text : `${text}。`;
}

function isAscii(c: string): boolean {
  return c.codePointAt(0)! < 0x80;
}

/** A CT-Transformer export run on text: FunASR's word split, tokens.json ids (unknown words: the last token, as TokenIDConverter), its windows. */
export class CtPunctuation {
  private readonly ids: Map<string, number>;

  constructor(
    readonly folder: PunctuationFolder,
    private readonly session: BackendSession,
  ) {
    this.ids = new Map(folder.tokens.map((t, i) => [t, i]));
  }

  async punctuate(text: string): Promise<string> {
    const words = splitWords(text);
    const unknown = this.folder.tokens.length - 1;
    const ids = words.map((w) => this.ids.get(w) ?? unknown);
    return punctuateWords(words, ids, this.folder.puncList, (window) => this.window(window));
  }

  private async window(ids: Int32Array): Promise<Int32Array> {
    const produced = await this.session.run({
      inputs: createTensor('inputs', 'INT32', [1, ids.length], ids),
      text_lengths: createTensor('text_lengths', 'INT32', [1], Int32Array.of(ids.length)),
    }, ['logits']);
    const logits = produced.logits.data as Float32Array;
    const classes = logits.length / ids.length;
    return Int32Array.from({ length: ids.length }, (_, t) => {
      let best = 0;
      for (let c = 1; c < classes; c++) if (logits[t * classes + c] > logits[t * classes + best]) best = c;
      return best;
    });
  }
}
