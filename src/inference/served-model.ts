import type { InferenceModel } from './inference-model.js';

/** A model version the repository serves: an InferenceModel it can bring up and take down. */
export interface ServedModel extends InferenceModel {
  /** Starts the model (instances, warmup); ready() turns true when it resolves. */
  load(): Promise<void>;
  /**
   * ready() turns false at once; resolves once in-flight requests finished and instances finalized.
   * Response streams still open after `streamTimeoutMs` are cancelled.
   */
  unload(options?: UnloadOptions): Promise<void>;
}

export interface UnloadOptions {
  readonly streamTimeoutMs?: number;
}
