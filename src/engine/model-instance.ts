import type { StreamChannel } from '../wire/stream-channel.js';
import type { SocketLink } from '../wire/socket-session.js';
import type { ExecuteCall, ExecuteOutcome, OnResult, SocketCall, StreamCall } from '../wire/wire-format.js';

/** One running copy of a model: a worker thread, or the HTTP thread for inline models. */
export interface ModelInstance {
  readonly index: number;
  /** Whether a call may be sent while another runs; the instance then runs them in order (worker threads do). */
  readonly canQueueBehind?: boolean;
  /** Constructs the class and runs `initialize`; rejects with SF_ERR_INITIALIZE_FAILED. */
  start(): Promise<void>;
  /** Runs one call; an unbatched call also reports each request's outcome to `onResult` as it ends. */
  execute(call: ExecuteCall, onResult?: OnResult): Promise<ExecuteOutcome>;
  /** Runs a streaming endpoint's method for the one request in `call`. */
  openStream(call: StreamCall, credit: number): StreamChannel;
  /** Starts a @WebSocketEndpoint method's session for one connection. */
  openSocket(call: SocketCall, credit: number): SocketLink;
  /** Runs `finalize` and releases the thread. */
  stop(): Promise<void>;
}

export interface InstanceEvents {
  /** The instance died on its own (crash, `process.exit`, out of memory); it will not answer again. */
  onCrash(instance: ModelInstance, reason: string): void;
}

export type InstanceFactory = (index: number, events: InstanceEvents) => ModelInstance;
