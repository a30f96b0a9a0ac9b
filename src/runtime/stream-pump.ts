import { serializeError } from '../errors/index.js';
import { StreamCredit } from './stream-credit.js';
import type { StreamControl, StreamEvent } from './stream-event.js';

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
