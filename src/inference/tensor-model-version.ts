import { createError } from '../errors/index.js';
import type { InferenceModelInfo, InferRequest, InferResponse } from './inference-model.js';
import type { SubmitOptions } from '../engine/dynamic-batcher.js';
import type { InstanceEngine, ValidatedRequest } from '../engine/instance-engine.js';
import { validateInferRequest } from './request-validation.js';
import type { ServedModel, UnloadOptions } from './served-model.js';
import type { TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';

/** How a version's requests reach its engine: through the scheduler schedulerFor registered there. */
export interface TensorRequests {
  submit(request: ValidatedRequest, options?: SubmitOptions): Promise<TensorWireResult>;
}

/** One `model_warmup` entry: its requests (made afresh for each run, since sending moves their buffers) and how often to run them. */
export interface WarmupRun {
  readonly name: string;
  readonly count: number;
  requests(): TensorWireRequest[];
}

/**
 * One served version of a config-only or model.ts repository model. Input tensors handed to
 * infer() are transferred to the instance's thread, not copied: their buffers are detached
 * afterwards, so a caller that needs them again passes copies.
 */
export class TensorModelVersion implements ServedModel {
  private isReady = false;

  constructor(
    readonly info: InferenceModelInfo,
    /** Its instances; a pipeline registers its denoiser's step scheduler here beside the version's own. */
    readonly engine: InstanceEngine,
    private readonly requests: TensorRequests,
    private readonly warmups: readonly WarmupRun[],
  ) {}

  /** Loaded, and not every instance lost past its restart limit (the model is then UNAVAILABLE until one is back). */
  ready(): boolean {
    return this.isReady && this.engine.available;
  }

  /** Starts every instance, runs each warmup `count` times on every instance, then turns ready. */
  async load(): Promise<void> {
    await this.engine.start();
    try {
      for (const warmup of this.warmups) {
        for (let run = 0; run < warmup.count; run++) await this.warmUp(warmup);
      }
    } catch (err) {
      await this.engine.stop();
      throw err;
    }
    this.isReady = true;
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    const { name, version } = this.info;
    if (!this.isReady) throw createError('SF_ERR_MODEL_NOT_READY', name, version);
    const validated = validateInferRequest(this.info, request);
    const result = await this.requests.submit(validated, { priority: request.priority, timeoutUs: request.timeoutUs, signal: request.signal, trace: request.trace });
    return { modelName: name, modelVersion: version, id: request.id, outputs: result.outputs, parameters: result.parameters };
  }

  /**
   * Turns not ready, waits for queued and running requests and open streams (cancelling streams
   * still open after `streamTimeoutMs`, see InstanceEngine.drain), then stops the instances.
   */
  async unload(options: UnloadOptions = {}): Promise<void> {
    this.isReady = false;
    await this.engine.drain(options.streamTimeoutMs);
    await this.engine.stop();
  }

  private async warmUp(warmup: WarmupRun): Promise<void> {
    const fail = (message: string) => createError('SF_ERR_EXECUTION_FAILED', this.info.name, `warmup '${warmup.name}'`, message);
    let outcomes;
    try {
      outcomes = await this.engine.runOnEachInstance(() => warmup.requests());
    } catch (err) {
      throw fail((err as Error).message);
    }
    for (const outcome of outcomes) {
      const failed = outcome.results.find((r) => !r.ok);
      if (failed && !failed.ok) throw fail(failed.error.message);
    }
  }
}
