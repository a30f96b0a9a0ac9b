import { deserializeError } from '../errors/index.js';
import type { BatchTimings, InferenceRecorder } from '../metrics/inference-recorder.js';
import type { BatchPolicy } from '../runtime/batch-policy.js';
import { DynamicBatcher, type BatchEntry, type SubmitOptions } from '../runtime/dynamic-batcher.js';
import { InstancePool, type PoolEvents, type RestartPolicy } from '../runtime/instance-pool.js';
import type { InstanceFactory, ModelInstance } from '../runtime/model-instance.js';
import { now, recordRequest, toUs } from '../runtime/request-accounting.js';
import type { ExecuteOutcome, WireRequest } from '../runtime/wire-format.js';
import type { ValidatedRequest } from './request-validation.js';
import { planExecutions } from './tensor-batching.js';
import type { TensorWireRequest, TensorWireResult } from './tensor-model-plan.js';

interface Queued {
  readonly request: ValidatedRequest;
  readonly submittedMs: number;
  dispatchedMs?: number;
  timings?: BatchTimings;
}

export interface TensorModelRuntimeOptions {
  readonly name: string;
  readonly version: string;
  readonly instanceCount: number;
  readonly policy: BatchPolicy;
  /** Most rows one execution may hold: max(1, max_batch_size). */
  readonly maxRows: number;
  readonly factory: InstanceFactory;
  readonly recorder: InferenceRecorder;
  readonly log: PoolEvents['onLog'];
  readonly restartPolicy?: RestartPolicy;
}

const NO_REQUEST_INFO: WireRequest['info'] = { params: {}, query: {}, headers: {} };
/**
 * Runs one version of a repository model: its instances (an InstancePool of worker threads hosting
 * TensorModelHost) behind one dynamic batcher. A batch the batcher forms is split into executions
 * by shape signature and row count (see planExecutions), run one after another on the instance the
 * batch was given; metrics count each execution as Triton does.
 */
export class TensorModelRuntime {
  private readonly pool: InstancePool;
  private readonly batcher: DynamicBatcher<Queued, TensorWireResult>;

  constructor(private readonly options: TensorModelRuntimeOptions) {
    const { name, version, recorder } = options;
    this.pool = new InstancePool(
      { name, instances: { count: options.instanceCount } },
      options.factory,
      {
        onIdle: () => this.batcher.notifyIdle(),
        onRestart: (index) => recorder.instanceRestarted(name, version, index),
        onLog: options.log,
      },
      options.restartPolicy,
    );
    this.batcher = new DynamicBatcher<Queued, TensorWireResult>(`${name} version ${version}`, options.policy, {
      idleInstances: () => this.pool.idleCount,
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
  async runOnEachInstance(requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]> {
    const instances: ModelInstance[] = [];
    while (this.pool.idleCount > 0) instances.push(this.pool.acquire());
    try {
      return await Promise.all(instances.map((instance) => instance.execute(this.call(requests()))));
    } finally {
      for (const instance of instances) this.pool.release(instance);
    }
  }

  async submit(request: ValidatedRequest, options: SubmitOptions = {}): Promise<TensorWireResult> {
    const { name, version, recorder } = this.options;
    const queued: Queued = { request, submittedMs: now() };
    return recordRequest(recorder, name, version, queued, (q) => this.batcher.submit(q, options));
  }

  /** Stops taking requests and waits for queued and running ones to finish. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  stop(): Promise<void> {
    return this.pool.stop();
  }

  private async execute(batch: readonly BatchEntry<Queued>[]): Promise<(TensorWireResult | Error)[]> {
    const { name, version, recorder } = this.options;
    const instance = this.pool.acquire();
    const dispatched = now();
    for (const entry of batch) entry.payload.dispatchedMs = dispatched;
    recorder.pendingChanged(name, version, -batch.length);
    const results: (TensorWireResult | Error)[] = [];
    try {
      const requests = batch.map((entry) => entry.payload.request);
      for (const group of planExecutions(requests, this.options.maxRows)) {
        const started = now();
        try {
          const outcome = await instance.execute(this.call(group.map((i) => requests[i].wire)));
          const received = now();
          const timings: BatchTimings = {
            computeInputUs: toUs(outcome.computeStartMs - started),
            computeInferUs: toUs(outcome.computeEndMs - outcome.computeStartMs),
            computeOutputUs: toUs(received - outcome.computeEndMs),
          };
          const rows = group.reduce((sum, i) => sum + requests[i].rows, 0);
          recorder.batchExecuted(name, version, Math.max(1, rows), timings);
          group.forEach((i, k) => {
            const result = outcome.results[k];
            batch[i].payload.timings = timings;
            results[i] = result.ok ? (result.value as TensorWireResult) : deserializeError(result.error);
          });
        } catch (err) {
          for (const i of group) results[i] = err instanceof Error ? err : new Error(String(err));
        }
      }
      return results;
    } finally {
      this.pool.release(instance);
    }
  }

  private call(requests: readonly TensorWireRequest[]) {
    return { methodName: 'execute', batched: true, requests: requests.map((payload) => ({ payload, info: NO_REQUEST_INFO })) };
  }
}
