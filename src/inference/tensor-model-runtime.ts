import { createError, deserializeError } from '../errors/index.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import type { BatchPolicy } from '../runtime/batch-policy.js';
import { DynamicBatcher, type BatchEntry, type SubmitOptions } from '../runtime/dynamic-batcher.js';
import { InstancePool, type PoolEvents, type RestartPolicy } from '../runtime/instance-pool.js';
import type { InstanceFactory, ModelInstance } from '../runtime/model-instance.js';
import { batchStartMs, executionTimings, now, recordRequest, toUs, type RequestClock } from '../runtime/request-accounting.js';
import type { StreamChannel } from '../runtime/stream-channel.js';
import type { ExecuteOutcome, TensorCall } from '../runtime/wire-format.js';
import { InstanceTurns } from './decoupled-instance-turns.js';
import type { ValidatedRequest } from './request-validation.js';
import { refuseSequenceParameters } from './sequence-parameters.js';
import { planExecutions } from './tensor-batching.js';
import type { TensorWireRequest, TensorWireResult } from './tensor-model-plan.js';

/** A request on its way to an instance, with the times the metrics need. */
export interface QueuedRequest extends RequestClock {
  readonly request: ValidatedRequest;
}

/** What TensorModelVersion drives: this class, or SequenceModelRuntime for stateful models. */
export interface TensorRuntime {
  start(): Promise<void>;
  /** Triton's warmup: `requests` once on every instance, outside the scheduler and the metrics. */
  runOnEachInstance(requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]>;
  submit(request: ValidatedRequest, options?: SubmitOptions): Promise<TensorWireResult>;
  /** False while every instance is down past its restart limit; submit then fails with SF_ERR_MODEL_UNAVAILABLE. */
  readonly available: boolean;
  drain(): Promise<void>;
  stop(): Promise<void>;
}

/** Where the executions of one model version are counted. */
export interface ExecutionAccounting {
  readonly name: string;
  readonly version: string;
  readonly recorder: InferenceRecorder;
  /** Most rows one execution may hold: max(1, max_batch_size). */
  readonly maxRows: number;
}

export interface TensorModelRuntimeOptions extends ExecutionAccounting {
  readonly instanceCount: number;
  readonly policy: BatchPolicy;
  readonly factory: InstanceFactory;
  readonly log: PoolEvents['onLog'];
  readonly restartPolicy?: RestartPolicy;
}

/**
 * Runs one version of a repository model: its instances (an InstancePool of worker threads hosting
 * TensorModelHost) behind one dynamic batcher. A batch the batcher forms is split into executions
 * by shape signature and row count (see planExecutions), run one after another on the instance the
 * batch was given; metrics count each execution as Triton does.
 */
export class TensorModelRuntime implements TensorRuntime {
  private readonly pool: InstancePool;
  private readonly batcher: DynamicBatcher<QueuedRequest, TensorWireResult>;
  /** Decoupled requests waiting for an instance of their own (see openStream). */
  private readonly turns = new InstanceTurns();

  constructor(private readonly options: TensorModelRuntimeOptions) {
    const { name, version, recorder } = options;
    this.pool = new InstancePool(
      { name, instances: { count: options.instanceCount } },
      options.factory,
      {
        onIdle: () => {
          this.batcher.notifyIdle();
          this.turns.notify();
        },
        onStandby: () => this.batcher.notifyIdle(),
        onRestart: (index) => recorder.instanceRestarted(name, version, index),
        onHeldDown: () => {
          if (this.pool.available) return;
          this.batcher.rejectQueued(this.pool.unavailableError());
          // Decoupled requests waiting for an instance look again and find none is coming.
          this.turns.notify();
        },
        onLog: options.log,
      },
      options.restartPolicy,
    );
    this.batcher = new DynamicBatcher<QueuedRequest, TensorWireResult>(`${name} version ${version}`, options.policy, {
      idleInstances: () => this.pool.idleCount,
      standbyInstances: () => this.pool.standbyCount,
      execute: (batch) => this.execute(batch),
    });
    recorder.registerModel(name, version);
  }

  start(): Promise<void> {
    return this.pool.start();
  }

  /**
   * Runs `requests` once on every instance, outside the batcher and the metrics (Triton's warmup).
   * Call it before the first submit: it needs every instance idle.
   */
  runOnEachInstance(requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]> {
    return runOnEachIdleInstance(this.pool, requests);
  }

  async submit(request: ValidatedRequest, options: SubmitOptions = {}): Promise<TensorWireResult> {
    const { name, version, recorder } = this.options;
    refuseSequenceParameters(name, request.wire.parameters);
    const queued: QueuedRequest = { request, submittedMs: now() };
    return recordRequest(recorder, name, version, queued, (q) => (this.pool.available ? this.batcher.submit(q, options) : Promise.reject(this.pool.unavailableError())));
  }

  get available(): boolean {
    return this.pool.available;
  }

  /** Stops taking requests and waits for queued and running ones to finish. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  stop(): Promise<void> {
    return this.pool.stop();
  }

  private async execute(batch: readonly BatchEntry<QueuedRequest>[]): Promise<(TensorWireResult | Error)[]> {
    const { instance, queuedBehind } = this.pool.acquireForBatch();
    try {
      return await executeOnInstance(instance, batch.map((entry) => entry.payload), this.options, queuedBehind);
    } finally {
      this.pool.release(instance);
    }
  }

  /**
   * Decoupled models: runs one request as a stream of responses on an instance of its own, busy
   * until the stream ends, fails or is cancelled (DecoupledModelVersion keeps such requests away
   * from the batcher). While every instance is busy it waits for the pool to free one, until
   * `signal` aborts (SF_ERR_CANCELLED) or `deadlineMs` passes (SF_ERR_TIMEOUT). The request counts as pending
   * until it has an instance, and as one success or failure once its first response, its end or its
   * error arrived; the stream's whole run counts as one execution. Resolves with the open channel,
   * which the caller must iterate or cancel.
   */
  async openStream(request: ValidatedRequest, credit: number, wait: { readonly signal?: AbortSignal; readonly deadlineMs?: number } = {}): Promise<StreamChannel> {
    const { name, version, recorder } = this.options;
    refuseSequenceParameters(name, request.wire.parameters);
    const queued: QueuedRequest = { request, submittedMs: now() };
    return recordRequest(recorder, name, version, queued, async (q) => {
      while (this.pool.idleCount === 0) {
        if (!this.pool.available) throw this.pool.unavailableError();
        await this.turns.wait(wait.signal, wait.deadlineMs);
      }
      const instance = this.pool.acquire();
      const dispatched = now();
      q.dispatchedMs = dispatched;
      recorder.pendingChanged(name, version, -1);
      const channel = instance.openStream(tensorCall([request.wire]), credit);
      void channel.finished.then(() => {
        recorder.batchExecuted(name, version, 1, { computeInputUs: 0, computeInferUs: toUs(now() - dispatched), computeOutputUs: 0 });
        this.pool.release(instance);
      });
      await channel.started;
      return channel;
    });
  }
}

/** Runs `requests` once on every idle instance of `pool` at the same time (warmup), then frees them. */
export async function runOnEachIdleInstance(pool: InstancePool, requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]> {
  const instances: ModelInstance[] = [];
  while (pool.idleCount > 0) instances.push(pool.acquire());
  try {
    return await Promise.all(instances.map((instance) => instance.execute(tensorCall(requests()))));
  } finally {
    for (const instance of instances) pool.release(instance);
  }
}

function tensorCall(requests: readonly TensorWireRequest[]): TensorCall {
  return { kind: 'tensor', requests };
}

/**
 * Runs the requests the scheduler gave one instance: split into executions by shape signature and
 * row count (see planExecutions), run one after another, each counted as Triton counts executions.
 * Resolves one result or Error per request, in order.
 */
export async function executeOnInstance(
  instance: ModelInstance,
  batch: readonly QueuedRequest[],
  accounting: ExecutionAccounting,
  queuedBehind = false,
): Promise<(TensorWireResult | Error)[]> {
  const { name, version, recorder } = accounting;
  const dispatched = now();
  for (const queued of batch) queued.dispatchedMs = dispatched;
  recorder.pendingChanged(name, version, -batch.length);
  const results: (TensorWireResult | Error)[] = [];
  const requests = batch.map((queued) => queued.request);
  for (const [g, group] of planExecutions(requests, accounting.maxRows).entries()) {
    const sent = now();
    try {
      const outcome = await instance.execute(tensorCall(group.map((i) => requests[i].wire)));
      const started = batchStartMs(sent, outcome, queuedBehind && g === 0);
      if (g === 0) for (const queued of batch) queued.dispatchedMs = started;
      const timings = executionTimings(outcome, started, now());
      const rows = group.reduce((sum, i) => sum + requests[i].rows, 0);
      recorder.batchExecuted(name, version, Math.max(1, rows), timings);
      group.forEach((i, k) => {
        const result = outcome.results[k];
        batch[i].timings = timings;
        results[i] = result.ok ? (result.value as TensorWireResult) : deserializeError(result.error);
      });
    } catch (err) {
      for (const i of group) results[i] = err instanceof Error ? err : new Error(String(err));
    }
  }
  return results;
}
