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
