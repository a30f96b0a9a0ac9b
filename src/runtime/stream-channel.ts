import { deserializeError } from '../errors/index.js';
import type { StreamControl, StreamEvent } from './stream-event.js';

/**
 * The consumer's end of a streamed model result, on the HTTP thread: an async iterable of the
 * chunks an instance produces. Taking a chunk grants the producer one more, so what waits here is
 * bounded by the initial credit; `cancel()` asks the producer to stop.
 */
export class StreamChannel implements AsyncIterable<unknown> {
  private readonly buffered: unknown[] = [];
  private producing = true;
  private cancelled = false;
  private failure?: Error;
  private waiter?: () => void;
  private settleFirst!: { resolve(): void; reject(err: Error): void };
  private settleFinished!: () => void;
  /** Settles with the first event: resolves on a chunk or the end, rejects on an error before any chunk. */
  readonly started: Promise<void>;
  /** Resolves once the producer has stopped (ended, failed, or acknowledged a cancel). */
  readonly finished: Promise<void>;

  constructor(private readonly control: StreamControl) {
    this.started = new Promise((resolve, reject) => (this.settleFirst = { resolve, reject }));
    // A stream that fails before its first chunk is answered through `started`; nobody iterates it.
    this.started.catch(() => undefined);
    this.finished = new Promise((resolve) => (this.settleFinished = resolve));
  }

  /** Delivers one event from the producer. */
  push(event: StreamEvent): void {
    if (!this.producing) return;
    if (event.kind === 'chunk') {
      if (!this.cancelled) this.buffered.push(event.value);
      this.settleFirst.resolve();
    } else {
      this.stop(event.kind === 'error' ? deserializeError(event.error) : undefined);
    }
    this.wakeConsumer();
  }

  /** Ends the stream from outside, e.g. when the producing instance died. */
  fail(err: Error): void {
    if (!this.producing) return;
    this.stop(err);
    this.wakeConsumer();
  }

  /** Asks the producer to stop; the consumer sees the end at once. */
  cancel(): void {
    if (!this.producing || this.cancelled) return;
    this.cancelled = true;
    this.buffered.length = 0;
    this.control.cancel();
    this.wakeConsumer();
  }

  /** Iterates the chunks; a consumer that stops early (break, return) cancels the producer. */
  async *[Symbol.asyncIterator](): AsyncGenerator<unknown, void, undefined> {
    try {
      for (;;) {
        if (this.buffered.length > 0) {
          const value = this.buffered.shift();
          if (this.producing) this.control.grant(1);
          yield value;
        } else if (this.failure) {
          throw this.failure;
        } else if (this.cancelled || !this.producing) {
          return;
        } else {
          await new Promise<void>((resolve) => (this.waiter = resolve));
        }
      }
    } finally {
      this.cancel();
    }
  }

  private stop(err: Error | undefined): void {
    this.producing = false;
    if (err && !this.cancelled) this.failure = err;
    if (err) this.settleFirst.reject(err);
    else this.settleFirst.resolve();
    this.settleFinished();
  }

  private wakeConsumer(): void {
    const wake = this.waiter;
    this.waiter = undefined;
    wake?.();
  }
}
