import type { SocketContext } from '../definition/model-context.js';
import { createError, deserializeError, type ServeFnError } from '../errors/index.js';
import type { TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import type { BatchPolicy } from '../spec/batch-policy.js';
import { DynamicBatcher, type BatchEntry, type BatcherHooks, type SubmitOptions } from './dynamic-batcher.js';
import { lengthBudget, type LengthBatching } from './length-batching.js';
import type { Scheduler } from './scheduler.js';
import { systemClock, type Clock } from './clock.js';
import { InstancePool, type Acquired, type PoolEvents } from './instance-pool.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import type { InstanceFactory, ModelInstance } from './model-instance.js';
import type { Attributes } from '@opentelemetry/api';
import type { RequestTrace } from '../tracing/request-tracing.js';
import { tracedRequest, tracedSequences } from '../tracing/engine-spans.js';
import { batchStartMs, executionTimings, requestQueued, requestSettled, toUs, type RequestClock } from './request-accounting.js';
import { now } from '../wire/epoch-time.js';
import type { SocketLink } from '../wire/socket-session.js';
import { DEFAULT_STREAM_CREDIT, type StreamChannel } from '../wire/stream-channel.js';
import { tensorCall, type ExecuteCall, type ExecuteOutcome, type StreamCall } from '../wire/wire-format.js';
import { startComputeSpans, traceparentsOf } from './compute-spans.js';

/** A tensor request checked against its model (inference/request-validation.ts), as the engine queues it. */
export interface ValidatedRequest {
  readonly wire: TensorWireRequest;
  /** Rows along dimension 0; 1 for models without batching. */
  readonly rows: number;
  readonly signature: string;
}

/** A tensor request on its way to an instance, with the times the metrics need. */
export interface QueuedTensorRequest extends RequestClock {
  readonly request: ValidatedRequest;
}

export interface InstanceEngineOptions {
  /** The model and version its statistics are kept under. */
  readonly name: string;
  readonly version: string;
  readonly instanceCount: number;
  readonly factory: InstanceFactory;
  readonly recorder: InferenceRecorder;
  readonly log: PoolEvents['onLog'];
  readonly restartPolicy?: RestartPolicy;
  /** The one time source of every queue delay, queue timeout and idle limit of this version's schedulers. */
  readonly clock?: Clock;
}

/** A scheduler that queues requests of type Q, each settling with an R. */
export interface Queueing<Q, R> {
  submit(queued: Q, options: SubmitOptions): Promise<R>;
}

/**
 * Runs the instances of one model version, for decorated and repository models alike: the instance
 * pool, the schedulers registered on it (see Scheduler) and what the pool tells them, the clock
 * their queue policies run on, each request's and execution's statistics (as Triton counts them),
 * streams and WebSocket sessions that hold or share an instance, and draining. The code above it
 * only says what a request is and which scheduler queues it.
 */
export class InstanceEngine {
  readonly clock: Clock;
  private readonly pool: InstancePool;
  /** In a fixed order, for wakeSchedulers' turns. */
  private readonly schedulers: Scheduler[] = [];
  private nextScheduler = 0;
  private readonly openStreams = new Set<StreamChannel>();
  /** Open WebSocket sessions per instance; a session does not hold its instance, so many share one. */
  private readonly sessions = new Map<ModelInstance, Set<SocketLink>>();
  private draining = false;

  constructor(private readonly options: InstanceEngineOptions) {
    const { name, version, recorder } = options;
    this.clock = options.clock ?? systemClock;
    this.pool = new InstancePool(
      { name, instances: { count: options.instanceCount } },
      options.factory,
      {
        onIdle: () => this.wakeSchedulers(),
        onQueueBehind: () => this.wakeSchedulers(),
        onRestart: (index) => recorder.instanceRestarted(name, version, index),
        onDown: (index) => {
          for (const scheduler of this.schedulers) scheduler.instanceDown?.(index);
        },
        onUp: (index) => {
          for (const scheduler of this.schedulers) scheduler.instanceUp?.(index);
        },
        onHeldDown: (index, error) => {
          // With no instance left, what waits for any instance fails now rather than at its timeout.
          const unavailable = this.pool.available ? undefined : this.pool.unavailableError();
          for (const scheduler of this.schedulers) scheduler.instanceDown?.(index, unavailable ?? error);
          if (unavailable) for (const scheduler of this.schedulers) scheduler.rejectQueued(unavailable);
        },
        onLog: options.log,
      },
      options.restartPolicy,
      this.clock,
    );
    recorder.registerModel(name, version);
  }

  /** Reports a sequence scheduler's live sequences in /metrics under this version's labels (serve_fn_sequences_live). */
  trackLiveSequences(read: () => number): void {
    this.options.recorder.trackLiveSequences(this.options.name, this.options.version, read);
  }

  /** Feeds `scheduler` this engine's instances from now on: it is offered each freed one, in turn with the others. */
  register<S extends Scheduler>(scheduler: S): S {
    this.schedulers.push(scheduler);
    return scheduler;
  }

  /**
   * A dynamic batcher fed by this engine's instances, on its clock. `queueBehind` batches (not
   * streams, which hold their instance until they end) may queue behind a busy instance's running one;
   * `rows` and `joins` shape its batches, and a `budget` closes them at a padded cost as well as at
   * the policy's size (text forward batches' tokens; see BatcherHooks).
   */
  batcher<T, R>(owner: string, policy: BatchPolicy, execute: (batch: readonly BatchEntry<T>[], answer: (index: number, result: R | Error) => void) => Promise<ReadonlyArray<R | Error>>, options: { readonly queueBehind: boolean } & Pick<BatcherHooks<T, R>, 'rows' | 'joins' | 'budget'>): DynamicBatcher<T, R> {
    return this.register(new DynamicBatcher<T, R>(owner, policy, {
      idleInstances: () => this.pool.idleCount,
      queueBehindInstances: options.queueBehind ? () => this.pool.queueBehindCount : undefined,
      execute,
      rows: options.rows,
      joins: options.joins,
      budget: options.budget,
    }, this.clock));
  }

  /**
   * The scheduler of stream-holding requests (decorated streaming endpoints, decoupled repository
   * models): a batcher of one request per call under `policy`'s queue policy, whose request, once an
   * instance is idle, opens its stream there (see openStream) and resolves with the channel, or with
   * the error that came before its first chunk. Nothing queues behind a stream, which holds its
   * instance until it ends. With `countRun`, a stream's whole run counts as one execution.
   */
  streamBatcher<Q extends RequestClock>(owner: string, policy: BatchPolicy, call: (queued: Q) => StreamCall, options: { readonly countRun: boolean }): DynamicBatcher<Q, StreamChannel> {
    const single: BatchPolicy = { ...policy, maxBatchSize: 1, preferredBatchSizes: [], maxQueueDelayUs: 0 };
    return this.batcher<Q, StreamChannel>(owner, single, async ([entry]) => {
      try {
        return [await this.openStream(entry.payload, call(entry.payload), DEFAULT_STREAM_CREDIT, options)];
      } catch (err) {
        return [err as Error];
      }
    }, { queueBehind: false });
  }

  /**
   * A dynamic batcher of tensor requests whose every batch is one execution, as Triton's dynamic
   * batcher forms them: `policy.maxBatchSize` counts rows (max_batch_size), and only requests whose
   * inputs have equal shapes beyond dimension 0 share a batch (`enforce_equal_shape_tensors`).
   */
  tensorBatcher(owner: string, policy: BatchPolicy, byLength?: LengthBatching): DynamicBatcher<QueuedTensorRequest, TensorWireResult> {
    return this.batcher<QueuedTensorRequest, TensorWireResult>(owner, policy, (batch) => this.runTensorBatch(batch.map((entry) => entry.payload)), {
      queueBehind: true,
      rows: (queued) => queued.request.rows,
      joins: (first, next) => first.request.signature === next.request.signature,
      ...(byLength ? { budget: lengthBudget(byLength) } : {}),
    });
  }

  /** Starts every instance; if one fails, the others are stopped and the error is thrown. */
  start(): Promise<void> {
    return this.pool.start();
  }

  stop(): Promise<void> {
    return this.pool.stop();
  }

  /** False while every instance is down past its restart limit (see InstancePool.available). */
  get available(): boolean {
    return this.pool.available;
  }

  /** SF_ERR_MODEL_UNAVAILABLE, naming when the next held-down instance is restarted. */
  unavailableError(): ServeFnError {
    return this.pool.unavailableError();
  }

  get instanceCount(): number {
    return this.options.instanceCount;
  }

  /** Whether instance `index` is idle, for a scheduler that decides to wait before taking it. */
  isIdle(index: number): boolean {
    return this.pool.isIdle(index);
  }

  /** Takes instance `index` if it is idle, for a scheduler that binds requests to one instance. */
  acquireIndex(index: number): Acquired | undefined {
    const instance = this.pool.acquireIndex(index);
    return instance && { instance, queuedBehind: false };
  }

  /** Queued or running requests of every scheduler, and open streams. */
  get pendingCount(): number {
    let total = 0;
    for (const scheduler of this.schedulers) total += scheduler.pendingCount + scheduler.inflightCount;
    return total + this.openStreams.size;
  }

  /**
   * Queues one request on `scheduler` (one registered here), counted as one request as Triton
   * counts it; fails at once while no instance is left.
   */
  submit<Q extends RequestClock, R>(scheduler: Queueing<Q, R>, queued: Q, options: SubmitOptions): Promise<R> {
    const { recorder, name, version } = this.options;
    requestQueued(recorder, name, version);
    if (options.trace) queued.trace = options.trace;
    let pending: Promise<R>;
    try {
      pending = this.pool.available ? scheduler.submit(queued, options) : Promise.reject(this.pool.unavailableError());
    } catch (err) {
      // Settled like any failure: otherwise a synchronous throw leaves the request pending for ever.
      pending = Promise.reject(err);
    }
    const settled = requestSettled(recorder, name, version, queued, pending);
    return options.trace ? tracedRequest(settled, options.trace, queued, this.spanAttributes()) : settled;
  }

  /**
   * Queues requests that arrived together (one client batch of texts) on `batcher` before any batch
   * is formed, so they can share one; each counted as one request, as `submit` counts it.
   */
  submitAll<Q extends RequestClock, R>(batcher: DynamicBatcher<Q, R>, queued: readonly Q[], options: SubmitOptions): Promise<R>[] {
    const { recorder, name, version } = this.options;
    for (let i = 0; i < queued.length; i++) requestQueued(recorder, name, version);
    if (options.trace) {
      for (const q of queued) {
        q.trace = options.trace;
        q.sharesCompute = true;
      }
    }
    const pending = this.pool.available ? batcher.submitAll(queued, options) : queued.map(() => Promise.reject(this.pool.unavailableError()));
    const settled = pending.map((p, i) => requestSettled(recorder, name, version, queued[i]!, p));
    if (options.trace) void tracedSequences(settled, options.trace, queued, this.spanAttributes());
    return settled;
  }

  /**
   * Runs one batch on an instance (by default an idle one, or a busy one to queue it behind, see
   * InstancePool.acquireForBatch): the batch leaves the pending count when sent, and the instance is
   * released when `run` ends.
   */
  async runBatch<R>(batch: readonly RequestClock[], run: (instance: ModelInstance, sentMs: number, queuedBehind: boolean) => Promise<R>, acquired: Acquired = this.pool.acquireForBatch()): Promise<R> {
    const { instance, queuedBehind } = acquired;
    const sent = now();
    for (const queued of batch) queued.dispatchedMs = sent;
    this.options.recorder.pendingChanged(this.options.name, this.options.version, -batch.length);
    const batchSpan = startComputeSpans(batch, sent, () => this.spanAttributes());
    try {
      return await run(instance, sent, queuedBehind);
    } finally {
      batchSpan?.end(now());
      this.pool.release(instance);
    }
  }

  /** The attributes of this model's spans; text models put them on their `tokenize` span too. */
  spanAttributes(): Attributes {
    return { 'serve_fn.model': this.options.name, 'serve_fn.model_version': this.options.version };
  }

  /** Records one execution of `rows` rows that began at `startedMs`; each of `requests` gets its timings. */
  recordExecution(requests: readonly RequestClock[], rows: number, outcome: Pick<ExecuteOutcome, 'computeStartMs' | 'computeEndMs'>, startedMs: number): void {
    const timings = executionTimings(outcome, startedMs, now());
    for (const queued of requests) queued.timings = timings;
    this.options.recorder.batchExecuted(this.options.name, this.options.version, rows, timings);
  }

  /**
   * Runs the tensor requests the scheduler gave one instance as one execution (they share their
   * shapes beyond dimension 0), counted as Triton counts executions. Resolves one result or Error
   * per request, in order.
   */
  runTensorBatch(batch: readonly QueuedTensorRequest[], acquired?: Acquired): Promise<(TensorWireResult | Error)[]> {
    return this.runBatch(
      batch,
      async (instance, sent, queuedBehind) => {
        try {
          const outcome = await instance.execute(tensorCall(batch.map((queued) => queued.request.wire), traceparentsOf(batch)));
          const started = batchStartMs(sent, outcome, queuedBehind);
          for (const queued of batch) queued.dispatchedMs = started;
          const rows = batch.reduce((sum, queued) => sum + queued.request.rows, 0);
          this.recordExecution(batch, Math.max(1, rows), outcome, started);
          return outcome.results.map((result) => (result.ok ? (result.value as TensorWireResult) : deserializeError(result.error)));
        } catch (err) {
          const error = err instanceof Error ? err : new Error(String(err));
          return batch.map(() => error);
        }
      },
      acquired,
    );
  }

  /**
   * Opens a stream for the one request in `call` on an idle instance (streamBatcher calls it when one is),
   * which stays busy until the stream ends, fails or is cancelled. With `countRun`, the stream's whole
   * run counts as one execution, as Triton counts a decoupled model's request. Resolves once the
   * first chunk (or the end) has arrived, so an error before it is an ordinary failed request.
   */
  async openStream(queued: RequestClock, call: StreamCall, credit: number, options: { readonly countRun: boolean }): Promise<StreamChannel> {
    const { name, version, recorder } = this.options;
    const instance = this.pool.acquire();
    const sent = now();
    queued.dispatchedMs = sent;
    recorder.pendingChanged(name, version, -1);
    // A stream's run is one span from dispatch to its end, after the request's answer began.
    const span = queued.trace?.start('stream', sent, this.spanAttributes());
    const channel = instance.openStream(span ? { ...call, traceparents: [span.trace.traceparent] } : call, credit);
    this.openStreams.add(channel);
    void channel.finished.then(() => {
      span?.end(now(), channel.failed);
      this.openStreams.delete(channel);
      if (options.countRun) recorder.batchExecuted(name, version, 1, { computeInputUs: 0, computeInferUs: toUs(now() - sent), computeOutputUs: 0 });
      this.pool.release(instance);
    });
    await channel.started;
    return channel;
  }

  /**
   * Starts a WebSocket connection's session on the running instance with the fewest sessions; the
   * whole connection stays there, so the method's local state is the connection's state.
   */
  openSocket(methodName: string, context: Omit<SocketContext, 'instanceIndex' | 'logger'>, credit: number, trace?: RequestTrace): SocketLink {
    if (this.draining) throw createError('SF_ERR_DRAINING');
    let chosen: ModelInstance | undefined;
    const load = (instance: ModelInstance): number => this.sessions.get(instance)?.size ?? 0;
    for (const instance of this.pool.running()) {
      if (!chosen || load(instance) < load(chosen)) chosen = instance;
    }
    if (!chosen) throw this.pool.available ? createError('SF_ERR_MODEL_NOT_READY', this.options.name, this.options.version) : this.pool.unavailableError();
    // A session never queues (it shares a running instance): its span is its run, open to close.
    const span = trace?.start('session', now(), { ...this.spanAttributes(), 'serve_fn.instance': chosen.index });
    const call = { methodName, context: { ...context, instanceIndex: chosen.index } };
    const link = chosen.openSocket(span ? { ...call, traceparent: span.trace.traceparent } : call, credit);
    const open = this.sessionsOn(chosen);
    open.add(link);
    void link.output.finished.then(() => {
      span?.end(now(), link.output.failed);
      open.delete(link);
      if (open.size === 0) this.sessions.delete(chosen);
    });
    return link;
  }

  /**
   * Runs `requests` once on every idle instance at the same time, outside the batchers and the
   * metrics (Triton's warmup), then frees them. Call it before the first submit: it needs every instance idle.
   */
  async runOnEachInstance(requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]> {
    const instances: ModelInstance[] = [];
    while (this.pool.idleCount > 0) instances.push(this.pool.acquire());
    try {
      return await Promise.all(instances.map((instance) => instance.execute(tensorCall(requests()))));
    } finally {
      for (const instance of instances) this.pool.release(instance);
    }
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
    const schedulersDrained = Promise.all(this.schedulers.map((s) => s.drain()));
    // Read after the schedulers drained: a streaming request queued before the drain opens its stream then.
    const streamsEnded = (): Promise<unknown> => Promise.all([...[...this.openStreams].map((c) => c.finished), ...links.map((link) => link.output.finished)]);
    const ended = schedulersDrained.then(streamsEnded).then(() => false);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<boolean>((resolve) => {
      if (streamTimeoutMs !== undefined) timer = setTimeout(() => resolve(true), streamTimeoutMs);
    });
    if (await Promise.race([ended, expired])) {
      await schedulersDrained;
      for (const channel of this.openStreams) channel.cancel();
      for (const link of links) link.close();
      const stuck = await Promise.race([streamsEnded().then(() => false), delay(CANCEL_GRACE_MS).then(() => true)]);
      if (stuck) this.options.log('warn', `model '${this.options.name}': streams still running ${CANCEL_GRACE_MS} ms after they were cancelled; finalizing anyway`);
    }
    clearTimeout(timer);
    await schedulersDrained;
  }

  private sessionsOn(instance: ModelInstance): Set<SocketLink> {
    let open = this.sessions.get(instance);
    if (!open) {
      open = new Set();
      this.sessions.set(instance, open);
    }
    return open;
  }

  /** Gives every scheduler a turn at a freed instance, starting with a different one each time. */
  private wakeSchedulers(): void {
    const list = this.schedulers;
    const start = this.nextScheduler++ % Math.max(1, list.length);
    for (let i = 0; i < list.length && this.pool.idleCount + this.pool.queueBehindCount > 0; i++) list[(start + i) % list.length].notifyIdle();
  }
}

/** How long drain waits for cancelled streams to acknowledge before it gives up on them. */
const CANCEL_GRACE_MS = 1000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());
