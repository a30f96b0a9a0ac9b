import { now } from '../wire/epoch-time.js';
import type { SocketSession } from '../wire/socket-session.js';
import type { StreamEvent, StreamPump } from '../wire/stream-channel.js';
import type { ExecuteCall, ExecuteOutcome, OnResult, SocketCall, StreamCall, WireResult } from '../wire/wire-format.js';

/**
 * What serves an instance's calls inside its thread, as python_backend's `pb_stub` process serves
 * them on its side of the process boundary: ModelHost for a decorated class, TensorModelHost for a
 * repository model, TextForwardHost for a text model folder. worker-entry reaches a host through this
 * interface only, so a new kind of model is a new host, not a new branch in the worker's main.
 */
export interface InstanceHost {
  /**
   * Runs one call: one execution of a batch, or an unbatched call's requests one after another,
   * each reported to `onResult` as it ends. Per-request errors are error results; a throw fails the call.
   */
  execute(call: ExecuteCall, onResult?: OnResult): Promise<ExecuteOutcome>;
  /** Opens one request's stream; the caller starts the returned pump with `run()`. */
  openStream(call: StreamCall, credit: number, emit: (event: StreamEvent) => void): StreamPump;
  /** Opens one WebSocket connection's session; a host whose models have no WebSocket endpoints has none. */
  openSocket?(call: SocketCall, credit: number, emit: (event: StreamEvent) => void, onTaken: () => void): SocketSession;
  finalize(): Promise<void>;
}

/** One execution, stamped with the compute start and end that the engine's statistics read. */
export async function timedExecution(run: () => Promise<WireResult[]>): Promise<ExecuteOutcome> {
  const computeStartMs = now();
  const results = await run();
  return { results, computeStartMs, computeEndMs: now() };
}
