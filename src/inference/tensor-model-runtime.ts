import type { BatchPolicy } from '../runtime/batch-policy.js';
import type { DynamicBatcher, SubmitOptions } from '../runtime/dynamic-batcher.js';
import { InstanceEngine, type InstanceEngineOptions, type QueuedTensorRequest } from '../runtime/instance-engine.js';
import { now } from '../runtime/request-accounting.js';
import type { StreamChannel } from '../runtime/stream-channel.js';
import { tensorCall, type ExecuteOutcome } from '../runtime/wire-format.js';
import type { RequestTrace } from '../tracing/request-tracing.js';
import { InstanceTurns } from './decoupled-instance-turns.js';
import type { ValidatedRequest } from './request-validation.js';
import { refuseSequenceParameters } from './sequence-parameters.js';
import type { TensorWireRequest, TensorWireResult } from './tensor-model-plan.js';

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

export interface TensorModelRuntimeOptions extends InstanceEngineOptions {
  /** Most rows one execution may hold: max(1, max_batch_size). */
  readonly maxRows: number;
  readonly policy: BatchPolicy;
}

/**
 * A repository model version on the instance engine (worker threads hosting TensorModelHost) behind
 * one dynamic batcher. A batch the batcher forms is split into executions by shape signature and
 * row count (see InstanceEngine.runTensorBatch), run one after another on the instance the batch was given.
 */
export class TensorModelRuntime implements TensorRuntime {
  private readonly engine: InstanceEngine;
  private readonly batcher: DynamicBatcher<QueuedTensorRequest, TensorWireResult>;
  /** Decoupled requests waiting for an instance of their own (see openStream). */
  private readonly turns = new InstanceTurns();

  constructor(private readonly options: TensorModelRuntimeOptions) {
    const { name, version } = options;
    this.engine = new InstanceEngine(options, {
      onIdle: () => this.turns.notify(),
      // Decoupled requests waiting for an instance look again and find none is coming.
      onHeldDown: () => {
        if (!this.engine.available) this.turns.notify();
      },
    });
    this.batcher = this.engine.batcher<QueuedTensorRequest, TensorWireResult>(`${name} version ${version}`, options.policy, (batch) => this.engine.runTensorBatch(batch.map((entry) => entry.payload), options.maxRows), { queueBehind: true });
  }

  start(): Promise<void> {
    return this.engine.start();
  }

  runOnEachInstance(requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]> {
    return this.engine.runOnEachInstance(requests);
  }

  async submit(request: ValidatedRequest, options: SubmitOptions = {}): Promise<TensorWireResult> {
    refuseSequenceParameters(this.options.name, request.wire.parameters);
    return this.engine.submit(this.batcher, { request, submittedMs: now() }, options);
  }

  get available(): boolean {
    return this.engine.available;
  }

  /** Stops taking requests and waits for queued and running ones to finish. */
  drain(): Promise<void> {
    return this.engine.drain();
  }

  stop(): Promise<void> {
    return this.engine.stop();
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
  async openStream(request: ValidatedRequest, credit: number, wait: { readonly signal?: AbortSignal; readonly deadlineMs?: number; readonly trace?: RequestTrace } = {}): Promise<StreamChannel> {
    refuseSequenceParameters(this.options.name, request.wire.parameters);
    const queued: QueuedTensorRequest = { request, submittedMs: now() };
    return this.engine.record(queued, async (q) => {
      while (this.engine.idleCount === 0) {
        if (!this.engine.available) throw this.engine.unavailableError();
        await this.turns.wait(wait.signal, wait.deadlineMs);
      }
      return this.engine.openStream(q, tensorCall([request.wire]), credit, { countRun: true });
    }, wait.trace);
  }
}
