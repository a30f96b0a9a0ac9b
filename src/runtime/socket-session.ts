import { SocketInbox } from './socket-inbox.js';
import type { StreamControl } from './stream-event.js';
import type { StreamPump } from './stream-pump.js';
import type { SocketInput } from './wire-format.js';

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
