import type { EndpointDefinition, ModelDefinition } from '../definition/model-definition.js';
import { createError, deserializeError, type ServeFnError } from '../errors/index.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { normalizeBatchPolicy, UNBATCHED_POLICY } from './batch-policy.js';
import { batchStartMs, executionTimings, now, recordRequest, type RequestClock } from './request-accounting.js';
import { DynamicBatcher, type BatchEntry, type SubmitOptions } from './dynamic-batcher.js';
import { InstancePool, type PoolEvents, type RestartPolicy } from './instance-pool.js';
import type { SocketContext } from '../definition/model-context.js';
import type { InstanceFactory, ModelInstance } from './model-instance.js';
import type { SocketLink } from './socket-link.js';
import type { StreamChannel } from './stream-channel.js';
import { DEFAULT_STREAM_CREDIT } from './stream-credit.js';
import type { EndpointCall, WireRequest, WireResult } from './wire-format.js';
import { EXECUTE_METHOD } from '../definition/tensor-interface-builder.js';
import type { ValidatedRequest } from '../inference/request-validation.js';
import { refuseSequenceParameters } from '../inference/sequence-parameters.js';
import { executeOnInstance, type ExecutionAccounting, type QueuedRequest } from '../inference/tensor-model-runtime.js';
import type { TensorWireResult } from '../inference/tensor-model-plan.js';

/** What the runtime does with every batcher alike, whatever requests it queues. */
type Scheduler = Pick<DynamicBatcher<unknown, unknown>, 'notifyIdle' | 'rejectQueued' | 'drain' | 'pendingCount' | 'inflightCount'>;

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
 * Everything that runs one model: its instance pool and one dynamic batcher per endpoint (an
 * endpoint without @Batch gets a batcher of size 1, so queue policy and metrics work the same),
 * plus one for its @Tensors interface, whose requests run on the same instances and count in the
 * same statistics as the endpoints' (as Triton's Python backend model serves one scheduler).
 */
export class ModelRuntime {
  private readonly pool: InstancePool;
  private readonly batchers = new Map<string, DynamicBatcher<Queued, unknown>>();
  /** The batchers in a fixed order, for wakeBatchers' turns; the map is complete once the constructor ends. */
  private readonly batcherList: readonly Scheduler[];
  private readonly tensorBatcher?: DynamicBatcher<QueuedRequest, TensorWireResult>;
  private nextBatcher = 0;
  private readonly openStreams = new Set<StreamChannel>();
  /** Open WebSocket sessions per instance; a session does not hold its instance, so many share one. */
  private readonly sessions = new Map<ModelInstance, Set<SocketLink>>();
  private draining = false;

  constructor(
    readonly definition: ModelDefinition,
    private readonly options: ModelRuntimeOptions,
  ) {
    this.pool = new InstancePool(
      definition,
      options.factory,
      {
        onIdle: () => this.wakeBatchers(),
        onStandby: () => this.wakeBatchers(),
        onRestart: (index) => options.recorder.instanceRestarted(definition.name, definition.version, index),
        onHeldDown: () => {
          if (this.pool.available) return;
          const error = this.pool.unavailableError();
          for (const batcher of this.batcherList) batcher.rejectQueued(error);
        },
        onLog: options.log,
      },
      options.restartPolicy,
    );
    for (const endpoint of definition.endpoints) {
      this.batchers.set(
        endpoint.methodName,
        new DynamicBatcher<Queued, unknown>(endpoint.id, endpoint.batch ?? (endpoint.stream ? STREAM_POLICY : UNBATCHED_POLICY), {
          idleInstances: () => this.pool.idleCount,
          // A stream holds its instance until it ends, so nothing may queue behind one.
          standbyInstances: endpoint.stream ? undefined : () => this.pool.standbyCount,
          execute: (batch, answer) => this.execute(endpoint, batch, answer),
        }),
      );
    }
    const tensors = definition.tensors;
    if (tensors) {
      this.tensorBatcher = new DynamicBatcher<QueuedRequest, TensorWireResult>(`${definition.className}.${EXECUTE_METHOD}`, tensors.batch ?? UNBATCHED_POLICY, {
        idleInstances: () => this.pool.idleCount,
        standbyInstances: () => this.pool.standbyCount,
        execute: (batch) => this.executeTensors(batch),
      });
    }
    this.batcherList = [...this.batchers.values(), ...(this.tensorBatcher ? [this.tensorBatcher] : [])];
    options.recorder.registerModel(definition.name, definition.version);
  }

  start(): Promise<void> {
    return this.pool.start();
  }

  /**
   * Queues one request for an endpoint method and resolves with its result; for a streaming
   * endpoint, a StreamChannel whose first chunk has arrived (the caller must iterate or cancel it).
   */
  async submit(methodName: string, wire: WireRequest, options: SubmitOptions = {}): Promise<unknown> {
    const batcher = this.batchers.get(methodName)!;
    const { name, version } = this.definition;
    const queued: Queued = { wire, submittedMs: now() };
    return recordRequest(this.options.recorder, name, version, queued, (q) => (this.pool.available ? batcher.submit(q, options) : Promise.reject(this.pool.unavailableError())));
  }

  /**
   * Queues one request checked against the @Tensors interface (see validateInferRequest) and
   * resolves with its outputs; the model must declare one.
   */
  async submitTensors(request: ValidatedRequest, options: SubmitOptions = {}): Promise<TensorWireResult> {
    const batcher = this.tensorBatcher!;
    const { name, version } = this.definition;
    refuseSequenceParameters(name, request.wire.parameters);
    const queued: QueuedRequest = { request, submittedMs: now() };
    return recordRequest(this.options.recorder, name, version, queued, (q) => (this.pool.available ? batcher.submit(q, options) : Promise.reject(this.pool.unavailableError())));
  }

  /** False while every instance is down past its restart limit (see InstancePool.available). */
  get available(): boolean {
    return this.pool.available;
  }

  /** SF_ERR_MODEL_UNAVAILABLE, naming when the next held-down instance is restarted (what submit rejects with while not available). */
  unavailableError(): ServeFnError {
    return this.pool.unavailableError();
  }

  /**
   * Starts a WebSocket connection's session on the running instance with the fewest sessions; the
   * whole connection stays there, so the method's local state is the connection's state.
   */
  openSocket(methodName: string, context: Omit<SocketContext, 'instanceIndex'>): SocketLink {
    const { name, version } = this.definition;
    if (this.draining) throw createError('SF_ERR_DRAINING');
    let chosen: ModelInstance | undefined;
    const load = (instance: ModelInstance): number => this.sessions.get(instance)?.size ?? 0;
    for (const instance of this.pool.running()) {
      if (!chosen || load(instance) < load(chosen)) chosen = instance;
    }
    if (!chosen) throw this.pool.available ? createError('SF_ERR_MODEL_NOT_READY', name, version) : this.pool.unavailableError();
    const link = chosen.openSocket({ methodName, context: { ...context, instanceIndex: chosen.index } }, DEFAULT_STREAM_CREDIT);
    const open = this.sessionsOn(chosen);
    open.add(link);
    void link.output.finished.then(() => {
      open.delete(link);
      if (open.size === 0) this.sessions.delete(chosen);
    });
    return link;
  }

  /**
   * Stops taking requests and waits for queued and running ones, and open streams, to finish.
   * WebSocket sessions are told their input has ended, as when a client stops sending, so a
   * method can send its last results before the connection closes. Streams and sessions still
   * open after `streamTimeoutMs` are cancelled: their generators' `return()` runs at their next
   * `next()`. One stuck where a cancel cannot reach it (a promise that never settles) is waited
   * for at most CANCEL_GRACE_MS more, then left to the instance's finalize.
   */
  async drain(streamTimeoutMs?: number): Promise<void> {
    this.draining = true;
    const links = [...this.sessions.values()].flatMap((open) => [...open]);
    for (const link of links) link.endInput();
    const batchersDrained = Promise.all(this.batcherList.map((b) => b.drain()));
    // Read after the batchers drained: a streaming request queued before the drain opens its stream then.
    const streamsEnded = (): Promise<unknown> => Promise.all([...[...this.openStreams].map((c) => c.finished), ...links.map((link) => link.output.finished)]);
    const ended = batchersDrained.then(streamsEnded).then(() => false);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<boolean>((resolve) => {
      if (streamTimeoutMs !== undefined) timer = setTimeout(() => resolve(true), streamTimeoutMs);
    });
    if (await Promise.race([ended, expired])) {
      await batchersDrained;
      for (const channel of this.openStreams) channel.cancel();
      for (const link of links) link.close();
      const stuck = await Promise.race([streamsEnded().then(() => false), delay(CANCEL_GRACE_MS).then(() => true)]);
      if (stuck) this.options.log('warn', `model '${this.definition.name}': streams still running ${CANCEL_GRACE_MS} ms after they were cancelled; finalizing anyway`);
    }
    clearTimeout(timer);
    await batchersDrained;
  }

  private sessionsOn(instance: ModelInstance): Set<SocketLink> {
    let open = this.sessions.get(instance);
    if (!open) {
      open = new Set();
      this.sessions.set(instance, open);
    }
    return open;
  }

  stop(): Promise<void> {
    return this.pool.stop();
  }

  get pendingCount(): number {
    let total = 0;
    for (const b of this.batcherList) total += b.pendingCount + b.inflightCount;
    return total + this.openStreams.size;
  }

  private async execute(endpoint: EndpointDefinition, batch: readonly BatchEntry<Queued>[], answer: (index: number, result: unknown) => void): Promise<unknown[]> {
    if (endpoint.stream) return this.executeStream(endpoint, batch[0]);
    const { name, version } = this.definition;
    const { recorder } = this.options;
    const { instance, queuedBehind } = this.pool.acquireForBatch();
    const sent = now();
    for (const entry of batch) entry.payload.dispatchedMs = sent;
    recorder.pendingChanged(name, version, -batch.length);
    const call: EndpointCall = { kind: 'endpoint', methodName: endpoint.methodName, batched: endpoint.batch !== undefined, requests: batch.map((e) => e.payload.wire) };
    try {
      if (!endpoint.batch) {
        // A dispatch group of an unbatched endpoint is one model call per request, run in turn:
        // each is counted and answered when it ends, and its wait behind the earlier ones is queue time.
        const outcome = await instance.execute(call, (index, each) => {
          const queued = batch[index].payload;
          queued.dispatchedMs = index === 0 ? batchStartMs(sent, each, queuedBehind) : Math.max(sent, each.computeStartMs);
          queued.timings = executionTimings(each, queued.dispatchedMs, now());
          recorder.batchExecuted(name, version, 1, queued.timings);
          answer(index, resultValue(each.results[0]));
        });
        return outcome.results.map(resultValue);
      }
      const outcome = await instance.execute(call);
      const started = batchStartMs(sent, outcome, queuedBehind);
      const timings = executionTimings(outcome, started, now());
      for (const entry of batch) {
        entry.payload.dispatchedMs = started;
        entry.payload.timings = timings;
      }
      recorder.batchExecuted(name, version, batch.length, timings);
      return outcome.results.map(resultValue);
    } finally {
      this.pool.release(instance);
    }
  }

  /** Runs a batch of tensor requests on one instance, split into executions as a repository model's are. */
  private async executeTensors(batch: readonly BatchEntry<QueuedRequest>[]): Promise<(TensorWireResult | Error)[]> {
    const { instance, queuedBehind } = this.pool.acquireForBatch();
    try {
      return await executeOnInstance(instance, batch.map((entry) => entry.payload), this.tensorAccounting(), queuedBehind);
    } finally {
      this.pool.release(instance);
    }
  }

  private tensorAccounting(): ExecutionAccounting {
    const { name, version } = this.definition;
    return { name, version, recorder: this.options.recorder, maxRows: Math.max(1, this.definition.tensors!.maxBatchSize) };
  }

  /**
   * Answers with the channel once the first chunk (or the end) has arrived, so an error before it is
   * an ordinary failed request; the instance stays busy until the stream ends or is cancelled.
   */
  private async executeStream(endpoint: EndpointDefinition, entry: BatchEntry<Queued>): Promise<unknown[]> {
    const { name, version } = this.definition;
    const instance = this.pool.acquire();
    entry.payload.dispatchedMs = now();
    this.options.recorder.pendingChanged(name, version, -1);
    const channel = instance.openStream({ kind: 'endpoint', methodName: endpoint.methodName, batched: false, requests: [entry.payload.wire] }, DEFAULT_STREAM_CREDIT);
    this.openStreams.add(channel);
    void channel.finished.then(() => {
      this.openStreams.delete(channel);
      this.pool.release(instance);
    });
    try {
      await channel.started;
      return [channel];
    } catch (err) {
      return [err as Error];
    }
  }

  /** Gives every endpoint a turn at a freed instance, starting with a different one each time. */
  private wakeBatchers(): void {
    const list = this.batcherList;
    const start = this.nextBatcher++ % list.length;
    for (let i = 0; i < list.length && this.pool.idleCount + this.pool.standbyCount > 0; i++) list[(start + i) % list.length].notifyIdle();
  }
}

const resultValue = (result: WireResult): unknown => (result.ok ? result.value : deserializeError(result.error));

/** How long drain waits for cancelled streams to acknowledge before it gives up on them. */
const CANCEL_GRACE_MS = 1000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** One request per call: a stream keeps its instance until it ends. */
const STREAM_POLICY = normalizeBatchPolicy({ maxBatchSize: 1 }, 'streaming endpoint');
