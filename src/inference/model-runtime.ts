import type { EndpointDefinition, ModelDefinition } from '../definition/model-definition.js';
import type { SocketContext } from '../definition/model-context.js';
import { EXECUTE_METHOD } from '../definition/tensor-interface-builder.js';
import { deserializeError } from '../errors/index.js';
import { type ValidatedRequest, InstanceEngine, type QueuedTensorRequest } from '../engine/instance-engine.js';
import { traceparentsOf } from '../engine/compute-spans.js';
import { refuseSequenceParameters } from '../engine/sequence-parameters.js';
import type { TensorWireResult } from '../wire/tensor-model-plan.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { normalizeBatchPolicy, UNBATCHED_POLICY } from '../spec/batch-policy.js';
import type { BatchEntry, DynamicBatcher, SubmitOptions } from '../engine/dynamic-batcher.js';
import type { RequestTrace } from '../tracing/request-tracing.js';
import type { PoolEvents } from '../engine/instance-pool.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import type { InstanceFactory } from '../engine/model-instance.js';
import { batchStartMs, type RequestClock } from '../engine/request-accounting.js';
import { now } from '../wire/epoch-time.js';
import type { SocketLink } from '../wire/socket-session.js';
import { type StreamChannel, DEFAULT_STREAM_CREDIT } from '../wire/stream-channel.js';
import type { EndpointCall, WireRequest, WireResult } from '../wire/wire-format.js';

interface Queued extends RequestClock {
  readonly wire: WireRequest;
}

export interface ModelRuntimeOptions {
  readonly factory: InstanceFactory;
  readonly recorder: InferenceRecorder;
  readonly log: PoolEvents['onLog'];
  readonly restartPolicy?: RestartPolicy;
}

/**
 * A decorated model on the instance engine: one dynamic batcher per endpoint (an endpoint without
 * @Batch gets a batcher of size 1, so queue policy and metrics work the same), plus one for its
 * @Tensors interface, whose requests run on the same instances and count in the same statistics
 * as the endpoints' (as Triton's Python backend model serves one scheduler).
 */
export class ModelRuntime {
  /** Starts, drains and stops the model's instances; the runtime only registers its batchers there (a @TextModel class's forward batches too). */
  readonly engine: InstanceEngine;
  private readonly batchers = new Map<string, DynamicBatcher<Queued, unknown>>();
  private readonly streamBatchers = new Map<string, DynamicBatcher<Queued, StreamChannel>>();
  private readonly tensorBatcher?: DynamicBatcher<QueuedTensorRequest, TensorWireResult>;

  constructor(
    readonly definition: ModelDefinition,
    options: ModelRuntimeOptions,
  ) {
    const { name, version } = definition;
    this.engine = new InstanceEngine({ name, version, instanceCount: definition.instances.count, ...options, restartPolicy: definition.instances.restartPolicy ?? options.restartPolicy });
    for (const endpoint of definition.endpoints) {
      if (endpoint.stream) {
        // A stream holds its instance until it ends, so nothing may queue behind one.
        this.streamBatchers.set(endpoint.methodName, this.engine.streamBatcher<Queued>(endpoint.id, STREAM_POLICY, (queued) => ({ kind: 'endpoint', methodName: endpoint.methodName, batched: false, requests: [queued.wire] }), { countRun: false }));
      } else {
        this.batchers.set(endpoint.methodName, this.engine.batcher<Queued, unknown>(endpoint.id, endpoint.batch ?? UNBATCHED_POLICY, (batch, answer) => this.execute(endpoint, batch, answer), { queueBehind: true }));
      }
    }
    const tensors = definition.tensors;
    if (tensors) {
      // Batches hold up to the interface's max_batch_size rows, which Triton's dynamic batcher takes as its limit.
      const policy = tensors.batch ? { ...tensors.batch, maxBatchSize: Math.max(1, tensors.maxBatchSize) } : UNBATCHED_POLICY;
      this.tensorBatcher = this.engine.tensorBatcher(`${definition.className}.${EXECUTE_METHOD}`, policy);
    }
  }

  /** Queues one request for a non-streaming endpoint method and resolves with its result. */
  async submit(methodName: string, wire: WireRequest, options: SubmitOptions = {}): Promise<unknown> {
    return this.engine.submit(this.batchers.get(methodName)!, { wire, submittedMs: now() }, options);
  }

  /**
   * Queues one request for a streaming endpoint method and resolves with its StreamChannel once
   * the first chunk has arrived (the caller must iterate or cancel it); an error before it rejects.
   */
  async openStream(methodName: string, wire: WireRequest, options: SubmitOptions = {}): Promise<StreamChannel> {
    return this.engine.submit(this.streamBatchers.get(methodName)!, { wire, submittedMs: now() }, options);
  }

  /**
   * Queues one request checked against the @Tensors interface (see validateInferRequest) and
   * resolves with its outputs; the model must declare one.
   */
  async submitTensors(request: ValidatedRequest, options: SubmitOptions = {}): Promise<TensorWireResult> {
    refuseSequenceParameters(this.definition.name, request.wire.parameters);
    return this.engine.submit(this.tensorBatcher!, { request, submittedMs: now() }, options);
  }

  /** Starts a WebSocket connection's session (see InstanceEngine.openSocket). */
  openSocket(methodName: string, context: Omit<SocketContext, 'instanceIndex' | 'logger'>, trace?: RequestTrace): SocketLink {
    return this.engine.openSocket(methodName, context, DEFAULT_STREAM_CREDIT, trace);
  }

  private execute(endpoint: EndpointDefinition, batch: readonly BatchEntry<Queued>[], answer: (index: number, result: unknown) => void): Promise<unknown[]> {
    const queued = batch.map((entry) => entry.payload);
    return this.engine.runBatch(queued, async (instance, sent, queuedBehind) => {
      // Built once dispatched: traced requests' compute spans start then (traceparentsOf).
      const traceparents = traceparentsOf(queued);
      const requests = queued.map((q) => q.wire);
      const batched = endpoint.batch !== undefined;
      const call: EndpointCall = traceparents ? { kind: 'endpoint', methodName: endpoint.methodName, batched, requests, traceparents } : { kind: 'endpoint', methodName: endpoint.methodName, batched, requests };
      if (!endpoint.batch) {
        // A dispatch group of an unbatched endpoint is one model call per request, run in turn:
        // each is counted and answered when it ends, and its wait behind the earlier ones is queue time.
        const outcome = await instance.execute(call, (index, each) => {
          const one = queued[index];
          one.dispatchedMs = index === 0 ? batchStartMs(sent, each, queuedBehind) : Math.max(sent, each.computeStartMs);
          this.engine.recordExecution([one], 1, each, one.dispatchedMs);
          answer(index, resultValue(each.results[0]));
        });
        return outcome.results.map(resultValue);
      }
      const outcome = await instance.execute(call);
      const started = batchStartMs(sent, outcome, queuedBehind);
      for (const one of queued) one.dispatchedMs = started;
      this.engine.recordExecution(queued, queued.length, outcome, started);
      return outcome.results.map(resultValue);
    });
  }
}

const resultValue = (result: WireResult): unknown => (result.ok ? result.value : deserializeError(result.error));

/** A streaming endpoint's queue policy: one unbounded queue without timeouts (see InstanceEngine.streamBatcher). */
const STREAM_POLICY = normalizeBatchPolicy({ maxBatchSize: 1 }, 'streaming endpoint');
