import { createError } from '../errors/index.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import type { CancelSignal, SubmitOptions } from '../runtime/dynamic-batcher.js';
import { InstanceEngine, type QueuedTensorRequest } from '../runtime/instance-engine.js';
import type { Acquired, PoolEvents, RestartPolicy } from '../runtime/instance-pool.js';
import { LinkedQueue, type Link } from '../runtime/linked-queue.js';
import type { InstanceFactory } from '../runtime/model-instance.js';
import { now } from '../runtime/request-accounting.js';
import type { ExecuteOutcome } from '../runtime/wire-format.js';
import type { ValidatedRequest } from './request-validation.js';
import { controlTensors, type SequenceControlInput } from './sequence-controls.js';
import { takeSequenceParameters } from './sequence-parameters.js';
import { SequenceRegistry, type SequenceRoute } from './sequence-registry.js';
import type { TensorWireRequest, TensorWireResult } from './tensor-model-plan.js';
import type { TensorRuntime } from './tensor-model-runtime.js';

export interface SequenceModelRuntimeOptions {
  readonly name: string;
  readonly version: string;
  readonly instanceCount: number;
  /** The model's max_batch_size; above 0, requests carry a batch dimension of 1. */
  readonly maxBatchSize: number;
  /** `max_sequence_idle_microseconds`. */
  readonly idleUs: number;
  readonly controls: readonly SequenceControlInput[];
  readonly factory: InstanceFactory;
  readonly recorder: InferenceRecorder;
  readonly log: PoolEvents['onLog'];
  readonly restartPolicy?: RestartPolicy;
  readonly clock?: Clock;
}

interface Waiting {
  readonly queued: QueuedTensorRequest;
  readonly route: SequenceRoute;
  link?: Link<Waiting>;
  detach?: () => void;
  readonly resolve: (result: TensorWireResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Runs one version of a stateful model (the sequence batcher of Triton's user_guide/batcher.md): every
 * request of a sequence runs on the instance its sequence was bound to at START, one at a time
 * and in arrival order; an execution gathers the oldest waiting request of up to max_batch_size
 * sequences of that instance. Each request carries its correlation id and START / END flags,
 * and the configured control inputs.
 */
export class SequenceModelRuntime implements TensorRuntime {
  private readonly engine: InstanceEngine;
  /** Per instance, the waiting requests of the sequences bound to it, in arrival order. */
  private readonly lanes: LinkedQueue<Waiting>[];
  private readonly registry: SequenceRegistry;
  /** Most rows one execution may hold: max(1, max_batch_size). */
  private readonly maxRows: number;
  private unsettled = 0;
  private draining: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(private readonly options: SequenceModelRuntimeOptions) {
    const { name, log } = options;
    this.maxRows = Math.max(1, options.maxBatchSize);
    this.registry = new SequenceRegistry({ modelName: name, laneCount: options.instanceCount, idleUs: options.idleUs, clock: options.clock ?? systemClock, log });
    this.lanes = Array.from({ length: options.instanceCount }, () => new LinkedQueue<Waiting>());
    this.engine = new InstanceEngine(options, {
      onIdle: (instance) => {
        this.registry.laneUp(instance.index);
        this.pump(instance.index);
      },
      onDown: (index) => {
        const dropped = this.registry.laneDown(index);
        if (dropped > 0) log('warn', `model '${name}' instance ${index} stopped: its ${dropped} live sequence(s) lost their state and must START again`);
      },
      // Requests bound to an instance that stays down would wait out the whole restart window.
      onHeldDown: (index, error) => this.rejectLane(index, this.engine.available ? error : this.engine.unavailableError()),
    });
  }

  /** Live sequences bound to each instance, by instance index. */
  get liveSequences(): readonly number[] {
    return this.registry.liveCounts;
  }

  /** Starts every instance; if one fails, the others are stopped and the error is thrown. */
  start(): Promise<void> {
    return this.engine.start();
  }

  /** Triton's warmup, on every instance; call it before the first submit. */
  runOnEachInstance(requests: () => TensorWireRequest[]): Promise<ExecuteOutcome[]> {
    return this.engine.runOnEachInstance(requests);
  }

  /** Throws the sequence 400s before the request counts as received; rejects SF_ERR_DRAINING while draining. */
  submit(request: ValidatedRequest, options: SubmitOptions = {}): Promise<TensorWireResult> {
    const { name, maxBatchSize } = this.options;
    if (this.draining) return Promise.reject(createError('SF_ERR_DRAINING'));
    if (!this.engine.available) return Promise.reject(this.engine.unavailableError());
    const { sequence, rest } = takeSequenceParameters(request.wire.parameters);
    if (maxBatchSize > 0 && request.rows !== 1) {
      return Promise.reject(createError('SF_ERR_BAD_REQUEST', `inference request to model '${name}' must specify batch-size 1 due to requirements of sequence batcher`));
    }
    let route: SequenceRoute;
    let wire: TensorWireRequest;
    try {
      route = this.registry.route(sequence);
      wire = this.wireRequest(request.wire, rest, route);
    } catch (err) {
      return Promise.reject(err);
    }
    const queued: QueuedTensorRequest = { request: { ...request, wire }, submittedMs: now() };
    this.unsettled++;
    return this.engine.record(queued, (q) => this.enqueue(q, route, options.signal)).finally(() => {
      route.done();
      this.settled();
    });
  }

  get available(): boolean {
    return this.engine.available;
  }

  /** Stops taking requests and waits for queued and running ones to finish. */
  drain(): Promise<void> {
    if (!this.draining) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.draining = { promise, resolve };
      if (this.unsettled === 0) resolve();
    }
    return this.draining.promise;
  }

  async stop(): Promise<void> {
    this.registry.close();
    await this.engine.stop();
  }

  private wireRequest(wire: TensorWireRequest, parameters: Record<string, unknown>, route: SequenceRoute): TensorWireRequest {
    const controls = controlTensors(this.options.controls, route, this.options.maxBatchSize > 0, this.options.name);
    return {
      ...wire,
      inputs: [...wire.inputs, ...controls],
      parameters,
      sequence: { correlationId: route.correlationId, start: route.start, end: route.end },
    };
  }

  private enqueue(queued: QueuedTensorRequest, route: SequenceRoute, signal: CancelSignal | undefined): Promise<TensorWireResult> {
    if (signal?.aborted) return Promise.reject(createError('SF_ERR_CANCELLED'));
    return new Promise((resolve, reject) => {
      const lane = this.lanes[route.lane];
      const waiting: Waiting = { queued, route, resolve, reject };
      waiting.link = lane.push(waiting);
      if (signal) {
        const onAbort = (): void => {
          if (!waiting.link) return;
          lane.remove(waiting.link);
          waiting.link = undefined;
          reject(createError('SF_ERR_CANCELLED'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiting.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.pump(route.lane);
    });
  }

  private rejectLane(index: number, error: Error): void {
    const lane = this.lanes[index];
    for (const waiting of lane) {
      lane.remove(waiting.link!);
      waiting.link = undefined;
      waiting.detach?.();
      waiting.reject(error);
    }
  }

  /**
   * Sends instance `index`, when idle, the oldest waiting request of each of up to maxRows sequences
   * whose inputs have the oldest one's shapes (one execution); the others wait for the next.
   */
  private pump(index: number): void {
    const lane = this.lanes[index];
    if (lane.size === 0) return;
    const acquired = this.engine.acquireIndex(index);
    if (!acquired) return;
    const taken: Waiting[] = [];
    const sequences = new Set<string>();
    for (const waiting of lane) {
      if (taken.length === this.maxRows) break;
      if (sequences.has(waiting.route.key)) continue;
      sequences.add(waiting.route.key);
      if (taken.length > 0 && waiting.queued.request.signature !== taken[0].queued.request.signature) continue;
      lane.remove(waiting.link!);
      waiting.link = undefined;
      waiting.detach?.();
      taken.push(waiting);
    }
    void this.run(acquired, taken);
  }

  private async run(acquired: Acquired, taken: readonly Waiting[]): Promise<void> {
    const results = await this.engine.runTensorBatch(taken.map((w) => w.queued), acquired);
    taken.forEach((waiting, i) => {
      const result = results[i];
      if (result instanceof Error) waiting.reject(result);
      else waiting.resolve(result);
    });
  }

  private settled(): void {
    this.unsettled--;
    if (this.unsettled === 0) this.draining?.resolve();
  }
}
