import type { ModelContext } from '../definition/model-context.js';
import type { Tensor } from '../tensor/tensor.js';

/**
 * The API of a repository `model.ts` (or `model.js`), serve-fn's equivalent of Triton's Python
 * backend `model.py` (protocols.md §1.20): a class with `execute(requests)` and optional
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
 */

/** One request of a batch, as Triton's `pb_utils.InferenceRequest`. */
export interface ExecuteRequest {
  readonly id?: string;
  /** The inputs as sent (with the batch dimension when the model batches). */
  readonly inputs: readonly Tensor[];
  /** The outputs the client asked for; a response may hold more, the others are dropped. */
  readonly requestedOutputNames: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
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
