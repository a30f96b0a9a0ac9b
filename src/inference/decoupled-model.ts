import type { InferenceModel, InferRequest, InferResponse } from './inference-model.js';

/**
 * Decoupled models (Triton's `model_transaction_policy { decoupled: true }`, see Triton's user_guide/decoupled_models.md):
 * 0..N responses per request, served by the streaming routes (generate_stream, ModelStreamInfer).
 */

/** One response of a decoupled model as the protocol layer sees it. */
export interface StreamedInferResponse extends InferResponse {
  /** The model marked it as the request's last (Triton's `triton_final_response`). */
  readonly final: boolean;
}

/**
 * A request's responses, in the order the model sent them. Iterating pulls them as fast as the
 * consumer goes; leaving the loop early, or `cancel()`, stops the model (its iterable's `return()`
 * runs in the instance). A failure after the first response is thrown by the iteration.
 */
export interface ResponseStream extends AsyncIterable<StreamedInferResponse> {
  cancel(): void;
}

export interface StreamingInferenceModel extends InferenceModel {
  /**
   * Runs one request of a decoupled model. Resolves once its first response or its end arrived;
   * rejects as infer() does when the request fails before that (unknown input, queue timeout,
   * a model error before its first response). The caller must iterate or cancel the stream.
   */
  inferStream(request: InferRequest): Promise<ResponseStream>;
}

/** Whether `model` can stream its responses: decoupled repository models can. */
export function canStream(model: InferenceModel): model is StreamingInferenceModel {
  return typeof (model as Partial<StreamingInferenceModel>).inferStream === 'function';
}
