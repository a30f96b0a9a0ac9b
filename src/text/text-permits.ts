import { MAX_CHARACTERS_PER_TOKEN } from './text-characters.js';

/**
 * Characters in a token of common English text, OpenAI's rule of thumb ("one token generally
 * corresponds to ~4 characters", platform.openai.com/tokenizer): a model-length input is about
 * max_input_length × 4 characters, the work one permit stands for.
 */
const TYPICAL_CHARACTERS_PER_TOKEN = 4;

/**
 * A text model's admission: TEI's --max-concurrent-requests permits, taken without waiting (TEI's
 * `try_acquire_permit`), so a server at its limit answers 429 at once instead of queueing, or
 * tokenizing, without bound. TEI takes one permit an input; here a request takes permits in
 * proportion to its cost, so one costly request holds as much of the server as the work it brings.
 */
export class TextPermits {
  private taken = 0;

  constructor(readonly capacity: number) {}

  /** Takes `count` permits, or none and answers undefined when fewer are free; the release is idempotent. */
  tryTake(count: number): (() => void) | undefined {
    if (this.taken + count > this.capacity) return undefined;
    this.taken += count;
    let held = true;
    return () => {
      if (held) this.taken -= count;
      held = false;
    };
  }
}

/**
 * The permits of a request's inputs, from the characters each hands the tokenizer (a pair's both
 * texts; token ids count none): one an input, as TEI, or one for each model-length input's worth of
 * characters when that is more. Characters past TEI's bound are cut or refused before tokenizing,
 * so they cost nothing. A request never needs more than every permit, so alone it is always admitted.
 */
export function inputPermits(characters: readonly number[], maxInputLength: number, capacity: number): number {
  const perPermit = maxInputLength * TYPICAL_CHARACTERS_PER_TOKEN;
  const bound = maxInputLength * MAX_CHARACTERS_PER_TOKEN;
  const units = characters.reduce((sum, count) => sum + Math.max(1, Math.ceil(Math.min(count, bound) / perPermit)), 0);
  return Math.max(characters.length, Math.min(units, capacity));
}

/**
 * The permits of an answer of `bytes`: the answer limit shared among every permit, so the answers
 * being built at once stay within one answer limit together.
 */
export function answerPermits(bytes: number, maxAnswerBytes: number, capacity: number): number {
  return Math.min(capacity, Math.ceil((bytes / maxAnswerBytes) * capacity));
}
