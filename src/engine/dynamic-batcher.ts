import type { Scheduler } from './scheduler.js';
import { createError } from '../errors/index.js';
import { oneResultPerRequest } from '../wire/batch-results.js';
import { priorityLevelFor, queueTimeoutUs, type BatchPolicy } from '../spec/batch-policy.js';
import type { CancelSignal } from '../spec/cancel-signal.js';
import { systemClock, type Clock } from './clock.js';
import { LinkedQueue, type Link } from './linked-queue.js';
import type { RequestTrace } from '../tracing/request-tracing.js';
import { PriorityQueues, type QueuedItem } from './priority-queues.js';
import { BatchFormation, type BatchFormationHooks } from './batch-formation.js';

/** One request as the model sees it inside a batch. */
export interface BatchEntry<T> {
  readonly payload: T;
  readonly enqueuedAtUs: number;
  /** The request's priority level (its default level when it named none; 0 without levels). */
  readonly priority: number;
}

export interface BatcherHooks<T, R> extends BatchFormationHooks<T> {
  /** how many instances can take a batch right now */
  idleInstances(): number;
  /**
   * how many busy instances can take a full batch queued behind their running one; execute() gets
   * such a batch when idleInstances() is 0
   */
  queueBehindInstances?(): number;
  /**
   * run one batch on an instance; resolves one result per entry, in order; an Error entry fails
   * only its own request. The instance must count as busy in idleInstances() once this returns.
   * `answer` settles entry `index` before the batch ends (its place in the resolved array is then
   * ignored), for entries run one after another.
   */
  execute(batch: readonly BatchEntry<T>[], answer: (index: number, result: R | Error) => void): Promise<ReadonlyArray<R | Error>>;
}

export interface SubmitOptions {
  /** 1 = highest; 0 or undefined = the policy's default level. */
  priority?: number;
  /** Queue timeout in µs; honoured only where the level allows overrides, and only below its default (if any). */
  timeoutUs?: number;
  /** Aborting removes the request while it is still queued; once dispatched it has no effect. */
  signal?: CancelSignal;
  /** The request's trace, when tracing is on: the engine records its queue wait and execution under it. */
  trace?: RequestTrace;
}

type Outcome<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: unknown };

interface Request<T, R> extends QueuedItem<Request<T, R>> {
  readonly entry: BatchEntry<T>;
  /** Its place among live requests in arrival order (preserveOrdering only). */
  arrival: Link<Request<T, R>> | undefined;
  timer: unknown;
  detachSignal: (() => void) | undefined;
  /** A finished result held back until every earlier request has settled (preserveOrdering). */
  held: Outcome<R> | undefined;
  /** Finished before its batch did (BatcherHooks.execute's `answer`). */
  answered: boolean;
  readonly resolve: (value: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Triton's dynamic batcher (Triton's user_guide/batcher.md): priority levels with per-level queue policies,
 * preferred batch sizes, a maximum queue delay, preserved ordering and draining. With
 * preserveOrdering, results settle in arrival order; a request that fails while still queued
 * (timeout, cancellation) settles at once, since it is no model output to keep in order.
 */
export class DynamicBatcher<T, R> implements Scheduler {
  private readonly queues: PriorityQueues<Request<T, R>>;
  /** Live requests in arrival order, kept only with preserveOrdering. */
  private readonly arrivals = new LinkedQueue<Request<T, R>>();
  private readonly timeoutsPossible: boolean;
  private inflight = 0;
  private batchTimer: unknown;
  private batchTimerAtUs = Infinity;
  private pumping = false;
  private pumpAgain = false;
  private draining: Promise<void> | undefined;
  private onDrained: (() => void) | undefined;
  /** nextBatch's answer, rewritten in place: it is asked on every submit, and an object each time showed in bench/overhead. */
  private readonly formation: BatchFormation<T, Request<T, R>>;

  constructor(
    readonly owner: string,
    private readonly policy: BatchPolicy,
    private readonly hooks: BatcherHooks<T, R>,
    private readonly clock: Clock = systemClock,
  ) {
    this.queues = new PriorityQueues(policy);
    this.formation = new BatchFormation(policy, hooks, this.queues);
    this.timeoutsPossible = this.queues.levels.some((l) => l.policy.defaultTimeoutUs > 0 || l.policy.allowTimeoutOverride);
  }

  /** queued, not yet dispatched */
  get pendingCount(): number {
    return this.queues.size;
  }

  /** dispatched, not yet settled */
  get inflightCount(): number {
    return this.inflight;
  }

  submit(payload: T, options: SubmitOptions = {}): Promise<R> {
    return this.submitAll([payload], options)[0];
  }

  /**
   * Queues several requests before any batch is formed, so requests that arrive together (one
   * client batch split into one request per text) can share a batch instead of the first leaving alone.
   */
  submitAll(payloads: readonly T[], options: SubmitOptions = {}): Promise<R>[] {
    const promises = payloads.map((payload) => this.enqueue(payload, options));
    this.pump();
    return promises;
  }

  private enqueue(payload: T, options: SubmitOptions): Promise<R> {
    if (this.draining) return Promise.reject(createError('SF_ERR_DRAINING'));
    let levelNumber: number;
    let level: Request<T, R>['level'];
    let timeout: number;
    try {
      levelNumber = priorityLevelFor(this.policy, options.priority ?? 0);
      level = this.queues.levels[this.policy.priorityLevels === 0 ? 0 : levelNumber - 1];
      timeout = queueTimeoutUs(level.policy, options.timeoutUs);
    } catch (err) {
      return Promise.reject(err);
    }
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(createError('SF_ERR_CANCELLED'));
    if (this.queues.isFull(level)) return Promise.reject(createError('SF_ERR_QUEUE_FULL'));
    const now = this.clock.now();
    const promise = new Promise<R>((resolve, reject) => {
      const request: Request<T, R> = {
        entry: Object.freeze({ payload, enqueuedAtUs: now, priority: levelNumber }),
        level,
        expiresAtUs: timeout === 0 ? Infinity : now + timeout,
        place: undefined,
        arrival: undefined,
        timer: undefined,
        detachSignal: undefined,
        held: undefined,
        answered: false,
        resolve,
        reject,
      };
      this.queues.enqueue(request);
      if (this.policy.preserveOrdering) request.arrival = this.arrivals.push(request);
      if (timeout > 0) request.timer = this.clock.setTimer(() => this.onTimeout(request), timeout);
      if (signal) {
        const onAbort = (): void => this.onAbort(request);
        signal.addEventListener('abort', onAbort, { once: true });
        request.detachSignal = () => signal.removeEventListener('abort', onAbort);
      }
    });
    return promise;
  }

  /** the runtime calls this whenever an instance becomes idle */
  notifyIdle(): void {
    this.pump();
  }

  /** Fails every queued request with `error` (no instance is left to run them); dispatched ones are not touched. */
  rejectQueued(error: Error): void {
    for (const request of this.queues.take(this.queues.size)) this.remove(request, error);
    this.disarmBatchTimer();
  }

  /** stop accepting (new submits reject with SF_ERR_DRAINING), resolve when queue and in-flight are empty */
  drain(): Promise<void> {
    if (!this.draining) {
      this.draining = new Promise((resolve) => {
        this.onDrained = resolve;
      });
      // No request can join a batch any more, so waiting out the queue delay gains nothing.
      this.pump();
      this.checkDrained();
    }
    return this.draining;
  }

  /** Sends batches while instances are idle; re-entrant calls (a hook calling back) loop once more. */
  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        this.formBatches();
      } while (this.pumpAgain);
    } finally {
      this.pumping = false;
    }
  }

  private formBatches(): void {
    let idle = this.queues.size > 0 ? this.hooks.idleInstances() : 0;
    while (idle > 0) {
      const now = this.clock.now();
      if (this.timeoutsPossible) this.expireCandidates(now);
      if (this.queues.size === 0) break;
      const size = this.readyBatchSize(now);
      if (size === 0) return;
      this.launch(this.take(size));
      idle--;
    }
    this.queueBehindBusyInstances();
    this.disarmBatchTimer();
  }

  /**
   * With every instance busy, a full batch may queue on one behind its running batch: it could not
   * grow by waiting, and it starts the moment the instance is done instead of after a round trip
   * through the HTTP thread. A smaller batch keeps waiting here, where later requests can join it.
   */
  private queueBehindBusyInstances(): void {
    let behind = this.fullBatchSize() > 0 ? (this.hooks.queueBehindInstances?.() ?? 0) : 0;
    while (behind > 0) {
      if (this.timeoutsPossible) this.expireCandidates(this.clock.now());
      const size = this.fullBatchSize();
      if (size === 0) return;
      this.launch(this.take(size));
      behind--;
    }
  }

  /** The size of the next batch when waiting cannot grow it, else 0. */
  private fullBatchSize(): number {
    const next = this.formation.next();
    return next.full ? next.size : 0;
  }

  /** Triton's GetDynamicBatch rules; 0 means wait, with the timer armed for the queue delay. */
  private readyBatchSize(now: number): number {
    const { maxQueueDelayUs } = this.policy;
    const next = this.formation.next();
    if (next.preferred > 0) return next.preferred;
    if (next.full || maxQueueDelayUs === 0 || this.draining) return next.size;
    const dueAtUs = this.queues.oldestEnqueuedAtUs() + maxQueueDelayUs;
    if (now >= dueAtUs) return next.size;
    this.armBatchTimer(dueAtUs, now);
    return 0;
  }

  /**
   * Applies due timeouts to the requests the next batch would take before it is formed, so a request
   * whose timer has not run yet (same instant, or a late timer) is never executed after it expired.
   */
  private expireCandidates(now: number): void {
    this.queues.expireDue(now, this.policy.maxBatchSize, (request) => this.expire(request));
  }

  private take(size: number): Request<T, R>[] {
    const batch = this.formation.take(size);
    for (const request of batch) this.stopWaiting(request);
    this.inflight += batch.length;
    return batch;
  }

  private launch(batch: Request<T, R>[]): void {
    const answer = (index: number, value: R | Error): void => {
      const request = batch[index];
      if (request === undefined || request.answered) return;
      this.finish(request, value instanceof Error ? { ok: false, error: value } : { ok: true, value });
      this.flushArrivals();
    };
    let results: Promise<ReadonlyArray<R | Error>>;
    try {
      results = Promise.resolve(this.hooks.execute(batch.map((request) => request.entry), answer));
    } catch (error) {
      results = Promise.reject(error);
    }
    results.then(
      (values) => this.complete(batch, values),
      (error: unknown) => this.fail(batch, error),
    );
  }

  private complete(batch: Request<T, R>[], output: unknown): void {
    let values: unknown[];
    try {
      values = oneResultPerRequest(this.owner, output, batch.length);
    } catch (error) {
      this.fail(batch, error);
      return;
    }
    batch.forEach((request, i) => {
      const value: unknown = values[i];
      if (!request.answered) this.finish(request, value instanceof Error ? { ok: false, error: value } : { ok: true, value: value as R });
    });
    this.flushArrivals();
  }

  private fail(batch: Request<T, R>[], error: unknown): void {
    for (const request of batch) if (!request.answered) this.finish(request, { ok: false, error });
    this.flushArrivals();
  }

  private finish(request: Request<T, R>, outcome: Outcome<R>): void {
    request.answered = true;
    if (this.policy.preserveOrdering) request.held = outcome;
    else this.settle(request, outcome);
  }

  /** Settles finished requests in arrival order, up to the first one still queued or running. */
  private flushArrivals(): void {
    for (const request of this.arrivals) {
      if (request.held === undefined) return;
      this.leaveArrivals(request);
      this.settle(request, request.held);
    }
  }

  private settle(request: Request<T, R>, outcome: Outcome<R>): void {
    this.inflight--;
    if (outcome.ok) request.resolve(outcome.value);
    else request.reject(outcome.error);
    this.checkDrained();
  }

  private onTimeout(request: Request<T, R>): void {
    request.timer = undefined;
    if (!this.queues.isWaiting(request)) return;
    this.expire(request);
    this.pump();
  }

  private expire(request: Request<T, R>): void {
    if (request.level.policy.timeoutAction === 'REJECT') {
      this.remove(request, createError('SF_ERR_TIMEOUT'));
      return;
    }
    this.clearTimeout(request);
    this.queues.delay(request);
  }

  private onAbort(request: Request<T, R>): void {
    if (request.place === undefined) return;
    this.remove(request, createError('SF_ERR_CANCELLED'));
    this.pump();
  }

  /** Fails a request that is still queued; it settles at once and no longer holds back later ones. */
  private remove(request: Request<T, R>, error: Error): void {
    this.queues.remove(request);
    this.stopWaiting(request);
    this.leaveArrivals(request);
    request.reject(error);
    this.flushArrivals();
    this.checkDrained();
  }

  /** A request off the queue no longer times out or gets cancelled. */
  private stopWaiting(request: Request<T, R>): void {
    this.clearTimeout(request);
    request.detachSignal?.();
    request.detachSignal = undefined;
  }

  private leaveArrivals(request: Request<T, R>): void {
    if (request.arrival) this.arrivals.remove(request.arrival);
    request.arrival = undefined;
  }

  private clearTimeout(request: Request<T, R>): void {
    if (request.timer === undefined) return;
    this.clock.clearTimer(request.timer);
    request.timer = undefined;
  }

  private armBatchTimer(atUs: number, now: number): void {
    if (this.batchTimer !== undefined && this.batchTimerAtUs === atUs) return;
    this.disarmBatchTimer();
    this.batchTimerAtUs = atUs;
    this.batchTimer = this.clock.setTimer(() => {
      this.batchTimer = undefined;
      this.pump();
    }, atUs - now);
  }

  private disarmBatchTimer(): void {
    if (this.batchTimer === undefined) return;
    this.clock.clearTimer(this.batchTimer);
    this.batchTimer = undefined;
  }

  private checkDrained(): void {
    if (this.onDrained === undefined || this.queues.size > 0 || this.inflight > 0) return;
    const resolve = this.onDrained;
    this.onDrained = undefined;
    resolve();
  }
}
