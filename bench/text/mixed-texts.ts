import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { seededRandom } from '../../test/fixtures/text/text-model-weights.js';
import { WORDPIECE_DIR } from '../../test/fixtures/text/text-model-folders.js';
import type { TextTokenizer } from '../../src/tokenizer/tokenizer.js';

export const SHORTEST = 8;
export const LONGEST = 256;

/**
 * A fixed list of texts whose lengths, special tokens included, are spread evenly over
 * SHORTEST..LONGEST tokens in a seeded random order: the mixed load of an embedding server that gets
 * queries and passages alike. The words are whole-word entries of the WordPiece fixture, so each
 * word is one token and a text of n tokens is n - 2 words between [CLS] and [SEP]; the tokenizer
 * confirms every length.
 */
export async function mixedTexts(tokenizer: TextTokenizer, count: number, seed: number): Promise<{ texts: string[]; lengths: number[] }> {
  const vocab = (JSON.parse(readFileSync(join(WORDPIECE_DIR, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } }).model.vocab;
  const words = Object.keys(vocab).filter((word) => /^[a-z]{2,}$/.test(word));
  const random = seededRandom(seed);
  const pick = (n: number): number => Math.floor(random() * n);
  const texts: string[] = [];
  const lengths: number[] = [];
  for (let i = 0; i < count; i++) {
    const length = SHORTEST + pick(LONGEST - SHORTEST + 1);
    const text = Array.from({ length: length - tokenizer.specialTokenCount(false) }, () => words[pick(words.length)]).join(' ');
    const encoded = (await tokenizer.encode(text)).ids.length;
    if (encoded !== length) throw new Error(`a text of ${length - tokenizer.specialTokenCount(false)} fixture words encoded to ${encoded} tokens, not ${length}`);
    texts.push(text);
    lengths.push(length);
  }
  return { texts, lengths };
}
