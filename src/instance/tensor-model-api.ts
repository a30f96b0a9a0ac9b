import type { ModelContext } from '../definition/model-context.js';
import type { Tensor } from '../spec/tensor.js';

/**
 * The API of a repository `model.ts` (or `model.js`), serve-fn's equivalent of Triton's Python
 * backend `model.py` (Triton's python_backend README): a class with `execute(requests)` and optional
 * `initialize(ctx)` and `finalize()`, exported as the module's default export or as its only
 * exported class with an `execute` method.
 *
 * ```ts
 * export default class AddOne implements TensorModel {
 *   execute(requests: readonly ExecuteRequest[]): ExecuteResponse[] {
 *     return requests.map((request) => {
 *       const input = request.input('INPUT0')!;
 *       const data = Float32Array.from(input.data as Float32Array, (v) => v + 1);
 *       return { outputs: [createTensor('OUTPUT0', 'FP32', input.shape, data)] };
 *     });
 *   }
 * }
 * ```
 *
 * A model whose config.pbtxt sets `model_transaction_policy { decoupled: true }` implements
 * {@link DecoupledTensorModel} instead: `execute` takes one request and yields its 0..N responses.
 */

/** `ExecuteRequest.flags` bit of the first request of a sequence (TRITONSERVER_REQUEST_FLAG_SEQUENCE_START). */
export const REQUEST_FLAG_SEQUENCE_START = 1;
/** `ExecuteRequest.flags` bit of the last request of a sequence (TRITONSERVER_REQUEST_FLAG_SEQUENCE_END). */
export const REQUEST_FLAG_SEQUENCE_END = 2;

/** One request of a batch, as Triton's `pb_utils.InferenceRequest`. */
export interface ExecuteRequest {
  readonly id?: string;
  /** The inputs as sent (with the batch dimension when the model batches). */
  readonly inputs: readonly Tensor[];
  /** The outputs the client asked for; a response may hold more, the others are dropped. */
  readonly requestedOutputNames: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
  /** Triton's `correlation_id()`: the request's sequence_id for a stateful model (sequence_batching), 0 otherwise. */
  readonly correlationId: number | string;
  /** Triton's `flags()`: REQUEST_FLAG_SEQUENCE_START and REQUEST_FLAG_SEQUENCE_END bits, 0 outside sequences. */
  readonly flags: number;
  /** Triton's `get_input_tensor_by_name`: undefined only for an optional input the client left out. */
  input(name: string): Tensor | undefined;
}

/**
 * The answer to one request: its output tensors, or an error that fails this request only (Triton's
 * `InferenceResponse(error=TritonError(...))`). A ServeFnError keeps its status; other errors are 500s.
 */
export type ExecuteResponse =
  | { readonly outputs: readonly Tensor[]; readonly parameters?: Readonly<Record<string, unknown>> }
  | { readonly error: Error | string };

/**
 * A repository model class. `initialize` receives Triton's `args` as a context: `config` (the model
 * configuration as JSON), `modelName`, `modelVersion`, `instanceName`, `deviceKind`, `deviceId`,
 * `modelDir`, plus `loadModel` and `infer` (BLS). `execute` gets every request of one batch and
 * returns one response per request, in order; throwing fails the whole batch.
 */
export interface TensorModel {
  initialize?(ctx: ModelContext): void | Promise<void>;
  execute(requests: readonly ExecuteRequest[]): readonly ExecuteResponse[] | Promise<readonly ExecuteResponse[]>;
  finalize?(): void | Promise<void>;
}

/**
 * A response of a decoupled model. `final: true` says it is the request's last (Triton's response
 * sent with TRITONSERVER_RESPONSE_COMPLETE_FINAL): nothing more is pulled from the iterable, whose
 * `finally` blocks then run. A `{ error }` response, or a throw, ends the request's stream with that error.
 */
export type DecoupledResponse = ExecuteResponse & { readonly final?: boolean };

/**
 * A repository model class of a decoupled model (Triton's decoupled Python backend, where
 * `execute` answers through each request's response sender). `execute` is called once per request
 * and returns its responses as an iterable, typically an async generator; ending the iterable
 * completes the request (TRITONSERVER_RESPONSE_COMPLETE_FINAL without a response). The instance
 * serves that one request until its iterable ends, and the iterable is pulled only as fast as the
 * client reads; a client that goes away stops it with `return()`, so `finally` blocks run.
 *
 * ```ts
 * export default class Countdown implements DecoupledTensorModel {
 *   async *execute(request: ExecuteRequest): AsyncGenerator<DecoupledResponse> {
 *     const n = (request.input('N')!.data as Int32Array)[0];
 *     for (let i = n; i > 0; i--) yield { outputs: [createTensor('OUT', 'INT32', [1], Int32Array.of(i))] };
 *   }
 * }
 * ```
 */
export interface DecoupledTensorModel {
  initialize?(ctx: ModelContext): void | Promise<void>;
  execute(request: ExecuteRequest): AsyncIterable<DecoupledResponse> | Iterable<DecoupledResponse>;
  finalize?(): void | Promise<void>;
}
