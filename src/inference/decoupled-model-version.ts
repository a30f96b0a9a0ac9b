import { createError } from '../errors/index.js';
import { type StreamChannel, DEFAULT_STREAM_CREDIT } from '../runtime/stream-channel.js';
import type { ResponseStream, StreamedInferResponse, StreamedResult, StreamingInferenceModel } from './decoupled-model.js';
import type { InferenceModelInfo, InferRequest, InferResponse } from './inference-model.js';
import { validateInferRequest } from './request-validation.js';
import type { UnloadOptions } from './served-model.js';
import { TensorModelVersion, type WarmupRun } from './tensor-model-version.js';
import type { TensorModelRuntime } from './tensor-model-runtime.js';

/**
 * One served version of a decoupled model.ts model: each request runs as a stream of 0..N
 * responses on an instance of its own (TensorModelRuntime.openStream), never through the batcher.
 * Requests wait for a free instance in arrival order, within their timeout and until cancelled.
 * infer() serves callers that take one response (the /generate route, ensembles, ctx.infer): it
 * fails unless the model sent exactly one.
 */
export class DecoupledModelVersion extends TensorModelVersion implements StreamingInferenceModel {
  /** One entry per accepted request, settled when its stream has ended or it failed. */
  private readonly running = new Set<Promise<void>>();
  private readonly open = new Set<StreamChannel>();
  private draining = false;

  constructor(
    info: InferenceModelInfo,
    private readonly streams: TensorModelRuntime,
    warmups: readonly WarmupRun[],
  ) {
    super(info, streams, warmups);
  }

  override ready(): boolean {
    return !this.draining && super.ready();
  }

  async inferStream(request: InferRequest): Promise<ResponseStream> {
    const { name, version } = this.info;
    if (!this.ready()) throw createError('SF_ERR_MODEL_NOT_READY', name, version);
    const validated = validateInferRequest(this.info, request);
    const deadlineMs = request.timeoutUs ? Date.now() + request.timeoutUs / 1000 : undefined;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.running.add(done);
    void done.then(() => this.running.delete(done));
    let channel: StreamChannel;
    try {
      channel = await this.streams.openStream(validated, DEFAULT_STREAM_CREDIT, { signal: request.signal, deadlineMs, trace: request.trace });
    } catch (err) {
      settle();
      throw err;
    }
    const onAbort = (): void => channel.cancel();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    // A client gone while the first response was computed aborted before the listener existed.
    if (request.signal?.aborted) channel.cancel();
    this.open.add(channel);
    void channel.finished.then(() => {
      this.open.delete(channel);
      request.signal?.removeEventListener('abort', onAbort);
      settle();
    });
    return responseStream(channel, { modelName: name, modelVersion: version, id: request.id });
  }

  override async infer(request: InferRequest): Promise<InferResponse> {
    const responses: StreamedInferResponse[] = [];
    for await (const response of await this.inferStream(request)) responses.push(response);
    if (responses.length !== 1) {
      throw createError('SF_ERR_BAD_REQUEST', `Model '${this.info.name}' is decoupled and sent ${responses.length} responses to this request; this call takes exactly one. Use generate_stream or gRPC ModelStreamInfer to receive every response.`);
    }
    const { final: _final, ...response } = responses[0];
    return response;
  }

  /**
   * Turns not ready, waits for every accepted request's stream to end (cancelling those still open
   * after `streamTimeoutMs`), then drains and stops the instances.
   */
  override async unload(options: UnloadOptions = {}): Promise<void> {
    this.draining = true;
    const timer = options.streamTimeoutMs === undefined ? undefined : setTimeout(() => {
      for (const channel of this.open) channel.cancel();
    }, options.streamTimeoutMs);
    while (this.running.size > 0) await Promise.all([...this.running]);
    clearTimeout(timer);
    await super.unload();
  }
}

function responseStream(channel: StreamChannel, meta: { modelName: string; modelVersion: string; id?: string }): ResponseStream {
  const { modelName, modelVersion, id } = meta;
  return {
    cancel: () => channel.cancel(),
    async *[Symbol.asyncIterator]() {
      for await (const chunk of channel) {
        const { result, final } = chunk as StreamedResult;
        yield { modelName, modelVersion, ...(id ? { id } : {}), outputs: result.outputs, ...(result.parameters ? { parameters: result.parameters } : {}), final };
      }
    },
  };
}
