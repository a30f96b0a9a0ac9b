import { StreamChannel } from './stream-channel.js';
import type { StreamControl } from './stream-event.js';
import type { SocketInput } from './wire-format.js';

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

  /** The instance reports that the method took `units` messages. */
  taken(units: number): void {
    for (const bytes of this.untakenSizes.splice(0, units)) this.untakenBytes -= bytes;
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
