import { IncrementalDetokenizer } from './incremental-detokenizer.js';
import { StopStringMatcher } from './stop-strings.js';
import type { FinishReason, GeneratedToken, Generation, PromptTokenizer } from './text-generator.js';

export interface GenerationTextOptions {
  readonly promptTokenIds: readonly number[];
  readonly stop: readonly string[];
  readonly includeStopString: boolean;
  readonly skipSpecialTokens: boolean;
  /** Stop strings apply only once this many tokens were generated (vLLM's `min_tokens`). */
  readonly minTokens: number;
}

/** One step's text: the delta the client may see, the tokens behind it and, on the last piece, how it ended. */
export interface TextPiece {
  readonly text: string;
  readonly tokens: readonly GeneratedToken[];
  readonly promptLogprobs?: readonly (GeneratedToken | undefined)[];
  readonly finishReason?: FinishReason;
  /** vLLM's `stop_reason`: the stop string or stop token id that ended the output; null otherwise. */
  readonly stopReason?: string | number | null;
}

/**
 * A generation as text: tokens detokenized incrementally, stop strings cut and held back, and the
 * generation stopped (Generation.stop) as soon as one matched. Tokens the scheduler still produced
 * after the stop are not part of the answer and are dropped, so usage counts what was answered.
 */
export async function* generationText(generation: Generation, tokenizer: PromptTokenizer, options: GenerationTextOptions): AsyncGenerator<TextPiece> {
  const detokenizer = new IncrementalDetokenizer(tokenizer, options.promptTokenIds, options.skipSpecialTokens);
  const stops = new StopStringMatcher(options.stop, options.includeStopString);
  let generated = 0;
  for await (const chunk of generation) {
    generated += chunk.tokens.length;
    let text = await detokenizer.push(chunk.tokens.map((t) => t.tokenId));
    if (chunk.finishReason) text += await detokenizer.flush();
    const checked = stops.push(text, generated >= options.minTokens);
    const first = chunk.promptLogprobs ? { promptLogprobs: chunk.promptLogprobs } : {};
    if (checked.stop !== undefined) {
      if (!chunk.finishReason) generation.stop();
      yield { ...first, text: checked.text, tokens: chunk.tokens, finishReason: 'stop', stopReason: checked.stop };
      return;
    }
    if (chunk.finishReason) {
      yield { ...first, text: checked.text + stops.flush(), tokens: chunk.tokens, finishReason: chunk.finishReason, stopReason: chunk.stopTokenId ?? null };
      return;
    }
    yield { ...first, text: checked.text, tokens: chunk.tokens };
  }
}
