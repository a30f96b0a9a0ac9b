import { deserializeError, serializeError, type SerializedError } from '../errors/index.js';

/*
 * The credit-based stream between a producer in an instance's thread (StreamPump, running a model's
 * async iterator) and its consumer on the HTTP thread (StreamChannel): the producer sends one chunk
 * per unit of credit, and the consumer grants one unit per chunk it takes, so what waits in between
 * is bounded whatever the client's speed. One file for the whole protocol, as Triton's Python
 * backend keeps every message between its two processes in one ipc_message.h.
 */

/** What a stream's producer (in the instance's thread) tells its consumer (on the HTTP thread). */
export type StreamEvent =
  | { readonly kind: 'chunk'; readonly value: unknown }
  /** The producer stopped: the iterable ended, or it was cancelled and its `return()` has run. */
  | { readonly kind: 'end' }
  | { readonly kind: 'error'; readonly error: SerializedError };

/** The consumer's requests to the producer. */
export interface StreamControl {
  grant(units: number): void;
  cancel(): void;
}

/**
 * How many chunks a stream's producer may send before the consumer asks for more. The consumer
 * grants one chunk each time it takes one, so at most this many chunks wait between the model and
 * the socket, whatever the client's speed.
 */
export const DEFAULT_STREAM_CREDIT = 8;

/** The producer's side of a credit scheme: it takes one unit per chunk and waits while it has none. */
export class StreamCredit {
  private available: number;
  private closed = false;
  private wake?: () => void;

  constructor(initial: number) {
    this.available = initial;
  }

  get remaining(): number {
    return this.available;
  }

  grant(units: number): void {
    this.available += units;
    this.release();
  }

  /** Stops the producer: a pending or later `take` answers false. */
  close(): void {
    this.closed = true;
    this.release();
  }

  /** Resolves true once a unit is taken, or false when the credit was closed first. */
  async take(): Promise<boolean> {
    while (!this.closed && this.available === 0) {
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    if (this.closed) return false;
    this.available--;
    return true;
  }

  private release(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/**
 * Drives a model's async iterator in the instance's thread: one `next()` per unit of credit, each
 * item sent as a chunk event. Cancelling closes the credit and runs the iterator's `return()`, so
 * the model's `finally` blocks run and the instance stops producing.
 */
export class StreamPump implements StreamControl {
  private readonly credit: StreamCredit;

  constructor(
    private readonly open: () => Promise<AsyncIterator<unknown>>,
    initialCredit: number,
    private readonly emit: (event: StreamEvent) => void,
    /** Turns an item into what crosses to the consumer; throwing ends the stream with that error. */
    private readonly toChunk: (item: unknown) => unknown = (item) => item,
  ) {
    this.credit = new StreamCredit(initialCredit);
  }

  grant(units: number): void {
    this.credit.grant(units);
  }

  cancel(): void {
    this.credit.close();
  }

  /** Runs until the iterator ends, fails or is cancelled; always emits exactly one end or error event. */
  async run(): Promise<void> {
    try {
      const iterator = await this.open();
      while (await this.credit.take()) {
        const step = await iterator.next();
        if (step.done) {
          this.emit({ kind: 'end' });
          return;
        }
        try {
          this.emit({ kind: 'chunk', value: this.toChunk(step.value) });
        } catch (err) {
          await iterator.return?.();
          throw err;
        }
      }
      await iterator.return?.();
      this.emit({ kind: 'end' });
    } catch (err) {
      this.emit({ kind: 'error', error: serializeError(err) });
    }
  }
}

/**
 * The consumer's end of a streamed model result, on the HTTP thread: an async iterable of the
 * chunks an instance produces. Taking a chunk grants the producer one more, so what waits here is
 * bounded by the initial credit; `cancel()` asks the producer to stop.
 */
/** A chunk the consumer's side adds to the stream: the producer sent it no credit for it. */
class Interjected {
  constructor(readonly value: unknown) {}
}

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

  /** Whether the stream ended with an error rather than its end or a cancel (its span's status). */
  get failed(): boolean {
    return this.failure !== undefined;
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

  /** Adds a chunk of the consumer's own after those delivered so far. */
  interject(value: unknown): void {
    if (!this.producing || this.cancelled) return;
    this.buffered.push(new Interjected(value));
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
          if (value instanceof Interjected) {
            yield value.value;
            continue;
          }
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
