import { createError } from '../errors/index.js';
import type { SubmitOptions } from '../engine/dynamic-batcher.js';
import type { InstanceEngine, ValidatedRequest } from '../engine/instance-engine.js';
import type { StreamChannel } from '../wire/stream-channel.js';
import type { ResponseStream, StreamingInferenceModel } from './decoupled-model.js';
import type { InferenceModelInfo, InferRequest } from './inference-model.js';
import { validateInferRequest } from './request-validation.js';
import type { StreamedResult, TensorWireResult } from '../wire/tensor-model-plan.js';
import { TensorModelVersion, type TensorRequests, type WarmupRun } from './tensor-model-version.js';

/** How a decoupled version's requests reach its engine: each opens a stream once an instance is free for it. */
export interface StreamRequests {
  openStream(request: ValidatedRequest, options?: SubmitOptions): Promise<StreamChannel>;
}

/**
 * One served version of a decoupled model.ts model: each request runs as a stream of 0..N
 * responses on an instance of its own. Requests wait for a free instance in the model's one
 * queue, under its queue policy (Triton's `dynamic_batching.default_queue_policy`), until
 * cancelled. infer() serves callers that take one response (the /generate route, ensembles,
 * ctx.infer): it fails unless the model sent exactly one. Unloading drains the engine, which waits
 * for open streams and cancels those still open after the stream timeout.
 */
export class DecoupledModelVersion extends TensorModelVersion implements StreamingInferenceModel {
  constructor(
    info: InferenceModelInfo,
    engine: InstanceEngine,
    private readonly streams: StreamRequests,
    warmups: readonly WarmupRun[],
  ) {
    super(info, engine, oneResponse(info.name, streams), warmups);
  }

  async inferStream(request: InferRequest): Promise<ResponseStream> {
    const { name, version } = this.info;
    if (!this.ready()) throw createError('SF_ERR_MODEL_NOT_READY', name, version);
    const channel = await openStream(this.streams, validateInferRequest(this.info, request), request);
    return responseStream(channel, { modelName: name, modelVersion: version, id: request.id });
  }
}

/** Opens `request`'s stream; aborting `options.signal` cancels it, while queued or once open. */
async function openStream(streams: StreamRequests, request: ValidatedRequest, options: SubmitOptions): Promise<StreamChannel> {
  const channel = await streams.openStream(request, { priority: options.priority, timeoutUs: options.timeoutUs, signal: options.signal, trace: options.trace });
  const { signal } = options;
  if (signal) {
    const onAbort = (): void => channel.cancel();
    signal.addEventListener('abort', onAbort, { once: true });
    void channel.finished.then(() => signal.removeEventListener('abort', onAbort));
    // A client gone while the first response was computed aborted before the listener existed.
    if (signal.aborted) channel.cancel();
  }
  return channel;
}

/** A decoupled model's answer to callers that take one response: its only response, or a 400. */
function oneResponse(modelName: string, streams: StreamRequests): TensorRequests {
  return {
    async submit(request, options = {}): Promise<TensorWireResult> {
      const results: TensorWireResult[] = [];
      for await (const chunk of await openStream(streams, request, options)) results.push((chunk as StreamedResult).result);
      if (results.length !== 1) {
        throw createError('SF_ERR_BAD_REQUEST', `Model '${modelName}' is decoupled and sent ${results.length} responses to this request; this call takes exactly one. Use generate_stream or gRPC ModelStreamInfer to receive every response.`);
      }
      return results[0];
    },
  };
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
