import type { CancelSignal } from '../spec/cancel-signal.js';
import type { RequestTrace } from '../tracing/request-tracing.js';

/** What a text operation takes beside its inputs, and what it answers (src/text/text-engine.ts). */
export interface TruncateOptions {
  /** The client's disconnect: its sequences still queued leave the queue, counted as dropped. */
  readonly signal?: CancelSignal;
  /** The request's trace, when tracing is on: its `tokenize`, `queue` and `compute` spans go under it. */
  readonly trace?: RequestTrace;
  /** Cut inputs over the model's limit instead of refusing them; default: limits.autoTruncate. */
  readonly truncate?: boolean;
  readonly truncationDirection?: 'left' | 'right';
}
export interface PromptOptions {
  /** A key of the model's prompts (sentence-transformers), prepended to each text. */
  readonly promptName?: string;
}
export interface EmbedOptions extends TruncateOptions, PromptOptions {
  /** L2-normalise; default true, as TEI's `normalize`. */
  readonly normalize?: boolean;
  /** Matryoshka: keep the first `dimensions` values (then normalise). */
  readonly dimensions?: number;
}
export interface TextTimings {
  readonly tokenizationMs: number;
  readonly queueMs: number;
  readonly inferenceMs: number;
  readonly totalMs: number;
}
export interface TextAnswer<T> {
  readonly values: T[];
  /** Tokens fed to the model, special tokens included (OpenAI's usage.prompt_tokens). */
  readonly promptTokens: number;
  readonly characters: number;
  readonly timings: TextTimings;
}
export interface ScoredLabel {
  readonly score: number;
  readonly label: string;
}
export interface TokenInfo {
  readonly id: number;
  readonly text: string;
  readonly special: boolean;
  readonly start: number | null;
  readonly stop: number | null;
}
