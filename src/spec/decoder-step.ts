/**
 * One step of a decoder (a generative model's forward pass with a KV cache), as the iteration-level
 * scheduler sends it to the instance that holds the caches: vLLM's `SchedulerOutput` reduced to
 * what a runtime needs. Dependency-free: the engine (which plans steps) and the instance (which
 * runs them on ONNX Runtime, node-llama-cpp or a class's step hook) both read it.
 */

/** One running sequence's part of a step: tokens to append to its KV cache. */
export interface DecoderStepRow {
  /** The scheduler's id for the sequence; the runtime keeps its cache between steps until released. */
  readonly sequenceId: number;
  /**
   * How many of the sequence's tokens the runtime's cache must already hold before `tokenIds`;
   * the runtime truncates the cache to this length first. 0 for a new sequence or one preempted
   * and recomputed (vLLM's RECOMPUTE); a prefix-cache hit starts past the cached prefix.
   */
  readonly cachedLength: number;
  /** The new tokens: a chunk of the prompt (chunked prefill) or the one token sampled last step. */
  readonly tokenIds: readonly number[];
  /** Which logits to return: none (a prefill chunk that does not end the prompt), the last position's, or every position's (prompt logprobs, `echo`). */
  readonly logits: 'none' | 'last' | 'all';
}

/** What a step returns per row, in row order: logits of the positions asked for, rows × vocab, float32. */
export interface DecoderStepResult {
  readonly rows: readonly (Float32Array | undefined)[];
}

/**
 * The step hook a `@GenerativeModel` class implements, run in its instances: serve-fn tokenizes,
 * schedules, samples and detokenizes; the class computes logits for the new tokens of the running
 * sequences with a KV cache of its own, keyed by `sequenceId`.
 */
export interface DecoderStepHook {
  /**
   * Runs one step for every row together (one batched forward pass where the runtime can): per
   * row, drop the sequence's cache past `cachedLength`, append `tokenIds` (at positions
   * `cachedLength`, `cachedLength + 1`, ...), and answer the logits `logits` asks for: one
   * vocabulary-wide row for `last`, one per new token, concatenated, for `all`.
   */
  step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> | DecoderStepResult;
  /** Drops the caches of finished, cancelled or preempted sequences. */
  release(sequenceIds: readonly number[]): void;
  /**
   * Copies the first `length` cached tokens of sequence `from` (which it still holds) into a new
   * sequence `to`: a prefix-cache hit. Absent when the runtime cannot; the scheduler then caches no prefix.
   */
  copyPrefix?(from: number, to: number, length: number): void;
}

/** A runtime that runs decoder steps on the instance: the ONNX decoder, a GGUF file, or a class's step hook. */
export interface DecoderRuntime extends DecoderStepHook {
  /** The width of a logits row (config.json's vocab_size, padded past the tokenizer's). */
  readonly vocabSize: number;
  step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult>;
}
