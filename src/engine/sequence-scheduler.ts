import { createError } from '../errors/index.js';
import type { ValidatedRequest, InstanceEngine, Queueing, QueuedTensorRequest } from './instance-engine.js';
import { controlTensors, type SequenceControlInput } from './sequence-controls.js';
import { takeSequenceParameters } from './sequence-parameters.js';
import { SequenceRegistry, type SequenceRoute } from './sequence-registry.js';
import type { TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import type { SubmitOptions } from './dynamic-batcher.js';
import type { CancelSignal } from '../spec/cancel-signal.js';
import type { PoolEvents } from './instance-pool.js';
import { LinkedQueue, type Link } from './linked-queue.js';
import { now } from '../wire/epoch-time.js';
import type { Scheduler } from './scheduler.js';

export interface SequenceSchedulerOptions {
  readonly name: string;
  /** The model's max_batch_size; above 0, requests carry a batch dimension of 1. */
  readonly maxBatchSize: number;
  /** `max_sequence_idle_microseconds`. */
  readonly idleUs: number;
  readonly controls: readonly SequenceControlInput[];
  readonly log: PoolEvents['onLog'];
  /**
   * Triton's direct strategy's wait (StrategyDirect): an idle instance waits up to
   * `maxQueueDelayUs` for `minimumSlotUtilization` of its active sequences to have a request ready,
   * so that chunks of concurrent streams share an execution. Either at 0 (Triton's default): no wait.
   */
  readonly direct?: { readonly maxQueueDelayUs: number; readonly minimumSlotUtilization: number };
}

interface SequenceRequest extends QueuedTensorRequest {
  readonly route: SequenceRoute;
}

interface Waiting {
  readonly queued: SequenceRequest;
  /** When it was queued, on the engine's clock. */
  readonly enqueuedUs: number;
  link?: Link<Waiting>;
  detach?: () => void;
  readonly resolve: (result: TensorWireResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Triton's sequence batcher (user_guide/batcher.md, src/sequence_batch_scheduler/) as a scheduler
 * on its version's engine: every request of a sequence runs on the instance its sequence was
 * bound to at START, one at a time and in arrival order; an execution gathers the oldest waiting
 * request of up to max_batch_size sequences of that instance. Each request carries its
 * correlation id and START / END flags, and the configured control inputs. Sequences expire on the
 * engine's clock after `max_sequence_idle_microseconds`.
 */
export class SequenceScheduler implements Scheduler {
  readonly owner: string;
  /** Per instance, the waiting requests of the sequences bound to it, in arrival order. */
  private readonly lanes: LinkedQueue<Waiting>[];
  /** Per instance, the timer of the direct strategy's wait, while one runs. */
  private readonly laneTimers: unknown[];
  private readonly registry: SequenceRegistry;
  /** Most rows one execution may hold: max(1, max_batch_size). */
  private readonly maxRows: number;
  private readonly queueing: Queueing<SequenceRequest, TensorWireResult> = { submit: (queued, options) => this.enqueue(queued, options.signal) };
  private inflight = 0;
  private draining: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly engine: InstanceEngine,
    instanceCount: number,
    private readonly options: SequenceSchedulerOptions,
  ) {
    const { name, log } = options;
    this.owner = name;
    this.maxRows = Math.max(1, options.maxBatchSize);
    this.registry = new SequenceRegistry({ modelName: name, laneCount: instanceCount, idleUs: options.idleUs, clock: engine.clock, log });
    this.lanes = Array.from({ length: instanceCount }, () => new LinkedQueue<Waiting>());
    this.laneTimers = Array.from({ length: instanceCount }, () => undefined);
    engine.register(this);
    engine.trackLiveSequences(() => this.registry.liveCounts.reduce((sum, n) => sum + n, 0));
  }

  get pendingCount(): number {
    return this.lanes.reduce((sum, lane) => sum + lane.size, 0);
  }

  get inflightCount(): number {
    return this.inflight;
  }

  /** Live sequences bound to each instance, by instance index. */
  get liveSequences(): readonly number[] {
    return this.registry.liveCounts;
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
    return this.engine.submit(this.queueing, { request: { ...request, wire }, route, submittedMs: now() }, options).finally(() => route.done());
  }

  notifyIdle(): void {
    for (let index = 0; index < this.lanes.length; index++) this.pump(index);
  }

  instanceDown(index: number, heldDown?: Error): void {
    if (heldDown) {
      // Requests bound to an instance that stays down would wait out the whole restart window.
      this.rejectLane(index, heldDown);
      return;
    }
    const dropped = this.registry.laneDown(index);
    if (dropped > 0) this.options.log('warn', `model '${this.options.name}' instance ${index} stopped: its ${dropped} live sequence(s) lost their state and must START again`);
  }

  instanceUp(index: number): void {
    this.registry.laneUp(index);
  }

  rejectQueued(error: Error): void {
    for (let index = 0; index < this.lanes.length; index++) this.rejectLane(index, error);
  }

  /** Stops taking requests; resolves once none is waiting or running, and then forgets every sequence. */
  drain(): Promise<void> {
    if (!this.draining) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.draining = { promise, resolve };
      // Nothing more joins a batch while draining: what waits for the queue delay goes now.
      this.notifyIdle();
      this.checkDrained();
    }
    return this.draining.promise;
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

  private enqueue(queued: SequenceRequest, signal: CancelSignal | undefined): Promise<TensorWireResult> {
    if (signal?.aborted) return Promise.reject(createError('SF_ERR_CANCELLED'));
    return new Promise((resolve, reject) => {
      const lane = this.lanes[queued.route.lane];
      const waiting: Waiting = { queued, enqueuedUs: this.engine.clock.now(), resolve, reject };
      waiting.link = lane.push(waiting);
      if (signal) {
        const onAbort = (): void => {
          if (!waiting.link) return;
          lane.remove(waiting.link);
          waiting.link = undefined;
          reject(createError('SF_ERR_CANCELLED'));
          this.checkDrained();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiting.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.pump(queued.route.lane);
    });
  }

  private rejectLane(index: number, error: Error): void {
    const lane = this.lanes[index];
    this.stopWaiting(index);
    for (const waiting of lane) {
      lane.remove(waiting.link!);
      waiting.link = undefined;
      waiting.detach?.();
      waiting.reject(error);
    }
    this.checkDrained();
  }

  /**
   * Sends instance `index`, when idle, the oldest waiting request of each of up to maxRows sequences
   * whose inputs have the oldest one's shapes (one execution); the others wait for the next. Under
   * the direct strategy's wait, the execution may first wait for more sequences' requests.
   */
  private pump(index: number): void {
    const lane = this.lanes[index];
    if (lane.size === 0 || !this.engine.isIdle(index)) return;
    const taken: Waiting[] = [];
    const sequences = new Set<string>();
    for (const waiting of lane) {
      if (taken.length === this.maxRows) break;
      if (sequences.has(waiting.queued.route.key)) continue;
      sequences.add(waiting.queued.route.key);
      if (taken.length > 0 && waiting.queued.request.signature !== taken[0].queued.request.signature) continue;
      taken.push(waiting);
    }
    if (this.waitsForMore(index, taken, sequences)) return;
    const acquired = this.engine.acquireIndex(index);
    if (!acquired) return;
    this.stopWaiting(index);
    for (const waiting of taken) {
      lane.remove(waiting.link!);
      waiting.link = undefined;
      waiting.detach?.();
    }
    this.inflight += taken.length;
    void this.engine.runTensorBatch(taken.map((w) => w.queued), acquired).then((results) => {
      taken.forEach((waiting, i) => {
        const result = results[i];
        if (result instanceof Error) waiting.reject(result);
        else waiting.resolve(result);
      });
      this.inflight -= taken.length;
      this.checkDrained();
    });
  }

  /**
   * Triton's DirectSequenceBatch wait: while fewer than `minimumSlotUtilization` of the instance's
   * active sequences (its slots in use, at most maxRows) have a request ready, and the oldest ready
   * one has waited less than `maxQueueDelayUs`, the execution waits; a new request or the timer
   * pumps again. `waitingKeys` are the sequences with a request waiting on this instance.
   */
  private waitsForMore(index: number, taken: readonly Waiting[], waitingKeys: ReadonlySet<string>): boolean {
    const direct = this.options.direct;
    const ready = taken.length;
    if (!direct || direct.maxQueueDelayUs <= 0 || direct.minimumSlotUtilization <= 0 || this.draining || ready >= this.maxRows) return false;
    // A sequence whose END request waits is no longer live, but it still holds its slot.
    let active = this.registry.liveOn(index);
    for (const key of waitingKeys) if (!this.registry.isLive(key)) active++;
    if (ready >= Math.ceil(direct.minimumSlotUtilization * Math.min(this.maxRows, active) - 1e-9)) return false;
    const now = this.engine.clock.now();
    const dueUs = taken[0].enqueuedUs + direct.maxQueueDelayUs;
    if (now >= dueUs) return false;
    if (this.laneTimers[index] === undefined) {
      this.laneTimers[index] = this.engine.clock.setTimer(() => {
        this.laneTimers[index] = undefined;
        this.pump(index);
      }, dueUs - now);
    }
    return true;
  }

  private stopWaiting(index: number): void {
    if (this.laneTimers[index] === undefined) return;
    this.engine.clock.clearTimer(this.laneTimers[index]);
    this.laneTimers[index] = undefined;
  }

  private checkDrained(): void {
    if (!this.draining || this.pendingCount > 0 || this.inflight > 0) return;
    this.registry.close();
    this.draining.resolve();
  }
}
