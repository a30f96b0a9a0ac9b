import { createError } from '../errors/index.js';
import { loneSurrogateAt } from '../validation/lone-surrogate.js';

/**
 * TEI's bound on characters per token (`MAX_CHAR_MULTIPLIER` in core/src/tokenization.rs of
 * huggingface/text-embeddings-inference): an input of more than max_input_length × 250 characters
 * cannot fit the model whatever the tokenizer makes of it, so it is refused, or cut when the request
 * truncates, before the tokenizer spends time (and memory) on all of it.
 */
export const MAX_CHARACTERS_PER_TOKEN = 250;

export interface CharacterLimit {
  /** The model's limit in tokens. */
  readonly maxInputLength: number;
  /** Whether the request truncates: an input over the limit is cut instead of refused. */
  readonly cut: boolean;
  /** Which end a cut keeps: 'right' truncation keeps the start, 'left' the end. */
  readonly direction: 'left' | 'right';
}

/**
 * A text as the tokenizer may take it, on every text route and protocol alike. A lone UTF-16
 * surrogate (which JSON.parse lets through as `"\ud800"`) is refused: UTF-8 cannot encode it, the
 * tokenizer would see U+FFFD instead, and TEI's serde refuses it when reading the body (422). A text
 * over TEI's character bound is refused with TEI's message, or cut to it when the request truncates.
 */
export function admittedText(text: string, limit: CharacterLimit): string {
  checkUnicode(text);
  const max = limit.maxInputLength * MAX_CHARACTERS_PER_TOKEN;
  const count = codePoints(text);
  if (count <= max) return text;
  if (!limit.cut) throw tooManyCharacters(max, count);
  return keepCodePoints(text, count, max, limit.direction);
}

/** A pair counts both texts, and a cut halves the bound between them, as TEI's `EncodingInput::Dual`. */
export function admittedPair(first: string, second: string, limit: CharacterLimit): [string, string] {
  checkUnicode(first);
  checkUnicode(second);
  const max = limit.maxInputLength * MAX_CHARACTERS_PER_TOKEN;
  const counts = [codePoints(first), codePoints(second)] as const;
  if (counts[0] + counts[1] <= max) return [first, second];
  if (!limit.cut) throw tooManyCharacters(max, counts[0] + counts[1]);
  const half = Math.floor(max / 2);
  return [keepCodePoints(first, counts[0], half, limit.direction), keepCodePoints(second, counts[1], half, limit.direction)];
}

/** Characters as TEI counts them (Rust's `chars()`: code points), so a surrogate pair is one. */
export function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i++) if ((text.charCodeAt(i) & 0xfc00) === 0xd800) count--;
  return count;
}

function checkUnicode(text: string): void {
  const at = loneSurrogateAt(text);
  if (at >= 0) throw createError('SF_ERR_TEXT_VALIDATION', `a text is not valid Unicode: it holds a lone surrogate (\\u${text.charCodeAt(at).toString(16)} at UTF-16 index ${at})`);
}

function tooManyCharacters(max: number, count: number): Error {
  return createError('SF_ERR_TEXT_VALIDATION', `\`inputs\` must have less than ${max} characters. Given: ${count}`);
}

/** The first (or last) `keep` code points of a text of `count`, never splitting a surrogate pair. */
function keepCodePoints(text: string, count: number, keep: number, direction: 'left' | 'right'): string {
  if (count <= keep) return text;
  if (count === text.length) return direction === 'right' ? text.slice(0, keep) : text.slice(text.length - keep);
  // Walk code points from the kept end; surrogate pairs are whole here (checkUnicode ran first).
  if (direction === 'right') {
    let units = 0;
    for (let kept = 0; kept < keep; kept++) units += (text.charCodeAt(units) & 0xfc00) === 0xd800 ? 2 : 1;
    return text.slice(0, units);
  }
  let start = text.length;
  for (let kept = 0; kept < keep; kept++) start -= (text.charCodeAt(start - 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  return text.slice(start);
}
