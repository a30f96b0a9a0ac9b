import type { InferOptions, ModelContextData } from '../definition/model-context.js';
import type { SerializedError } from '../errors/index.js';
import type { TensorModelPlan } from './tensor-model-plan.js';
import type { TextForwardPlan, TokenizerPlan } from './tensor-model-plan.js';
import type { Bundle } from './message-outbox.js';
import type { DecoderPlan, GeneratorClassPlan } from './decoder-step-call.js';
import type { StreamEvent } from './stream-channel.js';
import type { ExecuteCall, ExecuteOutcome, SocketCall, SocketInput, StreamCall } from './wire-format.js';

/** The messages between an instance's worker thread and the HTTP thread. */

export interface WorkerBootData {
  /** URL of worker-entry (.js when built, .ts when running from source); read by loader/worker-bootstrap.mjs. */
  readonly workerEntry: string;
  /** URL of the user's module that exports the model class. */
  readonly moduleUrl: string;
  readonly context: ModelContextData;
  /** Present for a repository model: the worker hosts it with TensorModelHost instead of a decorated class. */
  readonly tensorModel?: TensorModelPlan;
  /** Present for a text model folder: the worker hosts its forward pass with TextForwardHost. */
  readonly textForward?: TextForwardPlan;
  /** Present for a generative model folder: the worker hosts its decoder with DecoderHost. */
  readonly decoder?: DecoderPlan;
  /** Present for a text model's tokenizer: the worker encodes texts with TokenizerHost. */
  readonly tokenizer?: TokenizerPlan;
  /** Present for a @GenerativeModel class: the decorated class is hosted, with its grammar engine's vocabulary. */
  readonly generatorClass?: GeneratorClassPlan;
  /** OS niceness the worker gives its own thread before loading the model (see thread-priority.ts). */
  readonly niceness: number;
  /** The server logger's level, so the worker builds only the lines the server writes. */
  readonly logLevel: string;
}

export type ToWorker =
  | { readonly type: 'execute'; readonly id: number; readonly call: ExecuteCall }
  | { readonly type: 'infer-result'; readonly id: number; readonly value?: unknown; readonly error?: SerializedError }
  /** Starts a streaming endpoint call that may send `credit` chunks before it is granted more. */
  | { readonly type: 'stream-open'; readonly id: number; readonly call: StreamCall; readonly credit: number }
  | { readonly type: 'stream-credit'; readonly id: number; readonly units: number }
  | { readonly type: 'stream-cancel'; readonly id: number }
  /** Starts a WebSocket connection's session; its output uses the stream messages with the same id. */
  | { readonly type: 'socket-open'; readonly id: number; readonly call: SocketCall; readonly credit: number }
  | { readonly type: 'socket-message'; readonly id: number; readonly input: SocketInput }
  | { readonly type: 'socket-end'; readonly id: number }
  | { readonly type: 'finalize' }
  /** Messages queued in one turn of the HTTP thread (see MessageOutbox). */
  | Bundle<ToWorker>;

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'init-failed'; readonly error: SerializedError }
  /** The end of a call; an unbatched call's results came one by one before it ('result'), so it carries none. */
  | { readonly type: 'outcome'; readonly id: number; readonly outcome: ExecuteOutcome }
  /** One request of an unbatched call ended: `outcome` holds its result alone (see OnResult). */
  | { readonly type: 'result'; readonly id: number; readonly index: number; readonly outcome: ExecuteOutcome }
  | { readonly type: 'failed'; readonly id: number; readonly error: SerializedError }
  | { readonly type: 'stream'; readonly id: number; readonly event: StreamEvent }
  /** The session's method took one more client message. */
  | { readonly type: 'socket-taken'; readonly id: number }
  | { readonly type: 'finalized'; readonly error?: SerializedError }
  /** ctx.infer; `traceparent` is the caller's compute span when traced, so the callee's spans join its trace. */
  | { readonly type: 'infer'; readonly id: number; readonly model: string; readonly input: unknown; readonly options: InferOptions; readonly traceparent?: string }
  /** One line of ctx.logger, as pino's JSON, for the server's logger (see instance-logger.ts). */
  | { readonly type: 'log'; readonly line: string }
  /** Messages queued in one turn of the worker, such as the results of one call (see MessageOutbox). */
  | Bundle<FromWorker>;
