/**
 * The client's messages as a @WebSocketEndpoint method sees them, in the instance's thread: an
 * async iterable fed by the connection. Each message the method takes is reported with
 * `onTaken`, which is how the HTTP thread knows when to stop reading from a fast client.
 */
export class SocketInbox<T> implements AsyncIterable<T> {
  private readonly queued: T[] = [];
  private ended = false;
  private iterating = false;
  private waiter?: () => void;

  constructor(private readonly onTaken: () => void) {}

  push(message: T): void {
    if (this.ended) return;
    this.queued.push(message);
    this.wake();
  }

  /** No more messages: the client closed, or the server is shutting down. */
  end(): void {
    this.ended = true;
    this.wake();
  }

  get size(): number {
    return this.queued.length;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    // A second reader would split the messages between two loops, which no protocol wants.
    if (this.iterating) throw new Error('the messages of a WebSocket connection can be iterated only once');
    this.iterating = true;
    for (;;) {
      if (this.queued.length > 0) {
        const message = this.queued.shift()!;
        this.onTaken();
        yield message;
      } else if (this.ended) {
        return;
      } else {
        await new Promise<void>((resolve) => (this.waiter = resolve));
      }
    }
  }

  private wake(): void {
    const wake = this.waiter;
    this.waiter = undefined;
    wake?.();
  }
}
