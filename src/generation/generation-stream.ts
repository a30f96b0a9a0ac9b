import type { FinishReason, GeneratedToken, Generation, GenerationChunk, GenerationRequest } from './text-generator.js';
import type { RequestClock } from '../engine/request-accounting.js';

/**
 * One request in an iteration-level scheduler: its tokens so far, how much of them the runtime's
 * cache holds, and the chunks its protocol reads (a Generation). Chunks queue without bound: a
 * chunk is a few tokens, and the number of tokens is bounded by max_tokens.
 */
export class GenerationSequence implements Generation, RequestClock {
  readonly submittedMs: number;
  dispatchedMs?: number;
  readonly output: GeneratedToken[] = [];
  /** Tokens of prompt + output the runtime's cache holds (0 after a preemption). */
  computed = 0;
  /** The cached prefix this sequence's next row copies (a prefix-cache hit), until that row ran. */
  copyFrom?: number;
  /** Whether the instance knows the sequence (its SequenceStart was sent since it was admitted). */
  started = false;
  /** Prompt logprobs were asked for and not yet returned. */
  promptLogprobsPending: boolean;
  readonly promptLogprobs: (GeneratedToken | undefined)[] = [];
  /** stop() or the client's abort, to be acted on between steps. */
  ending?: FinishReason;
  finished = false;
  /** µs on the scheduler's clock, for the latency histograms. */
  readonly arrivalUs: number;
  firstScheduledUs?: number;
  lastTokenUs?: number;
  finishedUs?: number;
  private readonly chunks: GenerationChunk[] = [];
  private failure?: Error;
  private wake?: () => void;
  private readonly settled: { resolve(reason: FinishReason): void; reject(error: Error): void };
  readonly done: Promise<FinishReason>;
  private readonly onEnding: () => void;

  constructor(
    readonly id: number,
    readonly request: GenerationRequest,
    nowUs: number,
    /** Tells the scheduler that stop() or an abort wants the sequence ended. */
    onEnding: (sequence: GenerationSequence) => void,
  ) {
    this.submittedMs = performance.timeOrigin + performance.now();
    this.arrivalUs = nowUs;
    this.promptLogprobsPending = request.sampling.promptLogprobs !== undefined;
    let settled!: GenerationSequence['settled'];
    this.done = new Promise<FinishReason>((resolve, reject) => (settled = { resolve, reject }));
    // The engine's accounting awaits `done`; a failure also reaches the reader through the iterator.
    this.done.catch(() => undefined);
    this.settled = settled;
    this.onEnding = () => onEnding(this);
    request.signal?.addEventListener('abort', () => this.end('abort'), { once: true });
    if (request.signal?.aborted) this.ending = 'abort';
  }

  /** Prompt followed by every generated token: what the cache must hold before the next draw. */
  get length(): number {
    return this.request.promptTokenIds.length + this.output.length;
  }

  tokenAt(index: number): number {
    const prompt = this.request.promptTokenIds;
    return index < prompt.length ? prompt[index]! : this.output[index - prompt.length]!.tokenId;
  }

  stop(): void {
    this.end('stop');
  }

  private end(reason: FinishReason): void {
    if (this.finished || this.ending) return;
    this.ending = reason;
    this.onEnding();
  }

  push(chunk: GenerationChunk): void {
    this.chunks.push(chunk);
    if (chunk.finishReason) {
      this.finished = true;
      this.settled.resolve(chunk.finishReason);
    }
    this.wake?.();
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = error;
    this.settled.reject(error);
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GenerationChunk> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        yield chunk;
        if (chunk.finishReason) return;
        continue;
      }
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
