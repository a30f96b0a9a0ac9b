import { StreamChannel, type StreamControl, type StreamPump } from './stream-channel.js';
import type { SocketInput } from './wire-format.js';

/*
 * A WebSocket connection's session with a @WebSocketEndpoint method: in the instance's thread, the
 * inbox the method iterates and the session that feeds it and pumps what the method yields; on the
 * HTTP thread, the link the route sends client messages through. What the method yields travels
 * as a credit-based stream (stream-channel.ts).
 */

/** What the inbox holds in place of a refused message: taken in turn, never given to the method. */
export const REFUSED_MESSAGE: unique symbol = Symbol('refused WebSocket message');

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
        if (message !== REFUSED_MESSAGE) yield message;
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

/**
 * One WebSocket connection's run of a @WebSocketEndpoint method inside an instance: the client's
 * messages go into the inbox the method iterates; the pump sends what the method yields, as the
 * HTTP thread's credit allows.
 */
export class SocketSession implements StreamControl {
  constructor(
    private readonly inbox: SocketInbox<unknown>,
    private readonly pump: StreamPump,
    /** Turns a message off the wire into what the method receives (a DTO instance, a Buffer). */
    private readonly toMessage: (input: SocketInput) => unknown,
  ) {}

  deliver(input: SocketInput): void {
    this.inbox.push(this.toMessage(input));
  }

  /** The client sends no more; the method's loop over its messages ends once it has taken the rest. */
  endInput(): void {
    this.inbox.end();
  }

  grant(units: number): void {
    this.pump.grant(units);
  }

  /** Stops the method: no more input, and its generator's `return()` runs. */
  cancel(): void {
    this.inbox.end();
    this.pump.cancel();
  }

  run(): Promise<void> {
    return this.pump.run();
  }
}

/** How the HTTP thread reaches a connection's session in its instance. */
export interface SocketControl extends StreamControl {
  deliver(input: SocketInput): void;
  endInput(): void;
}

/**
 * The HTTP thread's end of a WebSocket connection's session: `send` hands the instance a client
 * message, `output` is what the method yields. It counts the messages the method has not taken
 * yet, so the route can stop reading a client that sends faster than the model consumes.
 */
export class SocketLink {
  readonly output: StreamChannel;
  /** Sizes of the messages sent and not yet taken, oldest first: the method takes them in order. */
  private readonly untakenSizes: number[] = [];
  /** The answers to refused messages, by their place among the untaken ones. */
  private readonly refusals = new Map<number, unknown>();
  private takenCount = 0;
  private untakenBytes = 0;
  private onTaken?: () => void;

  constructor(
    private readonly control: SocketControl,
    /** The instance that runs the session. */
    readonly instanceIndex: number,
  ) {
    this.output = new StreamChannel(control);
  }

  /** Client messages sent to the instance and not yet taken by the method. */
  get pendingInput(): number {
    return this.untakenSizes.length;
  }

  /** Their size in bytes, as they came off the wire. */
  get pendingBytes(): number {
    return this.untakenBytes;
  }

  send(input: SocketInput, bytes: number): void {
    this.untakenSizes.push(bytes);
    this.untakenBytes += bytes;
    this.control.deliver(input);
  }

  /**
   * Answers a message the HTTP thread refused (invalid JSON, or a DTO that does not validate) in its
   * turn: the answer goes out when the method asks for the message after the ones before it, so it
   * follows whatever the method yielded for them, as an HTTP/1.1 pipeline's answers follow its requests.
   */
  refuse(answer: unknown): void {
    this.refusals.set(this.takenCount + this.untakenSizes.length, answer);
    this.send({ kind: 'refused' }, 0);
  }

  /** The instance reports that the method took `units` messages. */
  taken(units: number): void {
    for (const bytes of this.untakenSizes.splice(0, units)) {
      this.untakenBytes -= bytes;
      const refusal = this.refusals.get(this.takenCount);
      if (this.refusals.delete(this.takenCount)) this.output.interject(refusal);
      this.takenCount++;
    }
    this.onTaken?.();
  }

  whenTaken(listener: () => void): void {
    this.onTaken = listener;
  }

  endInput(): void {
    this.control.endInput();
  }

  /** The client is gone: no more input, and the method is stopped. */
  close(): void {
    this.control.endInput();
    this.output.cancel();
  }
}
