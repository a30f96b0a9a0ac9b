import type { PromptTokenizer } from './text-generator.js';

/** Prompt tokens decoded with the first output tokens, as vLLM does, so a leading space or a merge across the boundary decodes as in the whole text. */
const PROMPT_CONTEXT_TOKENS = 5;

/**
 * Text deltas from token ids, as vLLM's incremental detokenization does
 * (vllm/transformers_utils/detokenizer_utils.py `detokenize_incrementally`): each step decodes a
 * short window of ids twice, with and without the new ones, and sends the difference; a window that
 * ends inside a UTF-8 character (a byte-level token holding part of it decodes to U+FFFD) waits for
 * the next token. Decoding the window rather than every id keeps a step's cost flat in the output's length.
 */
export class IncrementalDetokenizer {
  private readonly ids: number[];
  private prefixOffset: number;
  private readOffset: number;

  constructor(
    private readonly tokenizer: PromptTokenizer,
    promptTokenIds: readonly number[],
    private readonly skipSpecialTokens: boolean,
  ) {
    this.ids = promptTokenIds.slice(-PROMPT_CONTEXT_TOKENS);
    this.prefixOffset = 0;
    this.readOffset = this.ids.length;
  }

  /** The text the new ids complete; '' while they end inside a character. */
  async push(newIds: readonly number[]): Promise<string> {
    if (newIds.length === 0) return '';
    this.ids.push(...newIds);
    const [prefix, full] = await Promise.all([
      this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.skipSpecialTokens),
      this.tokenizer.decode(this.ids.slice(this.prefixOffset), this.skipSpecialTokens),
    ]);
    if (full.length <= prefix.length || full.endsWith('\uFFFD')) return '';
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    return full.slice(prefix.length);
  }

  /** The output ended: ids still waiting for the rest of a character decode as they are (U+FFFD), as a full decode would. */
  async flush(): Promise<string> {
    if (this.readOffset === this.ids.length) return '';
    const [prefix, full] = await Promise.all([
      this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.skipSpecialTokens),
      this.tokenizer.decode(this.ids.slice(this.prefixOffset), this.skipSpecialTokens),
    ]);
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    return full.slice(prefix.length);
  }
}
