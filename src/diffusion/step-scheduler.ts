import { createError } from '../errors/index.js';
import type { SubmitOptions } from '../engine/dynamic-batcher.js';
import type { CancelSignal } from '../spec/cancel-signal.js';
import type { InstanceEngine } from '../engine/instance-engine.js';
import type { Acquired } from '../engine/instance-pool.js';
import { EngineStepTarget } from '../engine/step-target.js';
import type { RequestClock } from '../engine/request-accounting.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import { tensorCall } from '../wire/wire-format.js';

/** One request's denoising as the step scheduler drives it; the request owns its latents and scheduler state. */
export interface StepWork extends RequestClock {
  /** Requests with equal keys can share a denoiser call (latent shape, guidance on or off, dtype). */
  readonly key: string;
  /** Rows this request adds to a denoiser call: 2 with classifier-free guidance, else 1. */
  readonly rows: number;
  /** The denoiser inputs for its current step (its own timestep per row). */
  stepInputs(): TensorWireRequest;
  /** Advances by one step with the denoiser's output; true once its last step is done. */
  advance(result: TensorWireResult): boolean;
}

/** vLLM-Omni's `--max-num-seqs` and request wait, per model (flags of `serve-fn start`, docs/diffusion.md). */
export interface StepLimits {
  /** Requests in the running set at once; the rest wait in their key's queue. */
  readonly maxRunning: number;
  /** How long a first request waits before the first step of an idle scheduler, so a burst starts together. */
  readonly admissionWaitUs: number;
  /**
   * Request-level batching instead (vLLM-Omni's REQUEST_BATCH mode): requests join only while
   * nothing runs, so a wave of requests that started together runs to its end before the next.
   * For comparison (bench/diffusion); off by default.
   */
  readonly wavesOnly?: boolean;
}

export const DEFAULT_STEP_LIMITS: StepLimits = { maxRunning: 8, admissionWaitUs: 2_000 };

/** What the step scheduler reports for the serve_fn_diffusion_* metrics. */
export interface StepObserver {
  admitted(work: StepWork, queuedUs: number): void;
  stepped(rows: number, seconds: number, requests: number): void;
  aborted(work: StepWork): void;
  runningChanged(running: number): void;
}

interface Entry {
  readonly work: StepWork;
  readonly signal?: CancelSignal;
  readonly enqueuedUs: number;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/**
 * The denoiser's step-level (iteration-level) scheduler on its InstanceEngine (see Scheduler): at
 * each tick it takes the running requests of one compatibility key, whatever step each is at,
 * sends one batched denoiser call with a per-row timestep, and advances each; between ticks it
 * drops cancelled requests and admits waiting ones. Waiting requests queue per key and are admitted
 * by deficit round robin over the keys (quantum: the largest request, 2 rows), so one resolution
 * cannot starve another — what vLLM-Omni's #3860 proposes against its FIFO admission. Ticks take
 * the running keys in turn. Ticks run on the engine as the text generator's steps do (EngineStepTarget):
 * each is one execution in the denoiser's nv_* statistics, and a request is dispatched in its first.
 */
export class StepScheduler implements Scheduler {
  private readonly waiting = new Map<string, Entry[]>();
  private readonly deficits = new Map<string, number>();
  private readonly running = new Map<string, Entry[]>();
  /** Keys with a denoiser call in flight. */
  private readonly ticking = new Set<string>();
  private nextWaitingKey = 0;
  private nextRunningKey = 0;
  private runningCount = 0;
  private waitingCount = 0;
  private holdTimer: unknown;
  private draining = false;
  private drained: (() => void) | undefined;
  private readonly target: EngineStepTarget;

  /**
   * `maxRows` bounds one denoiser call: the denoiser's max_batch_size, which for an `.om` on an NPU
   * is its largest dynamic-batch gear (a larger batch is refused there); a key's running set is
   * admitted up to it, so every tick fits.
   */
  constructor(
    readonly owner: string,
    private readonly engine: InstanceEngine,
    private readonly limits: StepLimits,
    private readonly observer: StepObserver,
    private readonly maxRows = Number.POSITIVE_INFINITY,
  ) {
    this.target = new EngineStepTarget(engine);
  }

  get pendingCount(): number {
    return this.waitingCount;
  }

  get inflightCount(): number {
    return this.runningCount;
  }

  /** Queues `work`; resolves once its last step is done, rejects when it is cancelled or a step fails. */
  submit(work: StepWork, options: SubmitOptions = {}): Promise<void> {
    if (this.draining) return Promise.reject(createError('SF_ERR_DRAINING'));
    if (options.signal?.aborted) return Promise.reject(createError('SF_ERR_CANCELLED'));
    if (work.rows > this.maxRows) {
      return Promise.reject(createError('SF_ERR_BAD_REQUEST', `a step of this request takes ${work.rows} rows (classifier-free guidance doubles them), but ${this.owner} runs at most ${this.maxRows} per call (its max_batch_size or largest batch gear); ask with guidance_scale <= 1`));
    }
    return new Promise<void>((resolve, reject) => {
      const entry: Entry = { work, signal: options.signal, enqueuedUs: this.engine.clock.now(), resolve, reject };
      const queue = this.waiting.get(work.key) ?? [];
      queue.push(entry);
      this.waiting.set(work.key, queue);
      this.waitingCount++;
      if (this.runningCount === 0 && this.holdTimer === undefined && this.limits.admissionWaitUs > 0) {
        this.holdTimer = this.engine.clock.setTimer(() => {
          this.holdTimer = undefined;
          this.notifyIdle();
        }, this.limits.admissionWaitUs);
        return;
      }
      this.notifyIdle();
    });
  }

  notifyIdle(): void {
    if (this.holdTimer === undefined) this.admit();
    for (;;) {
      const keys = [...this.running.keys()].filter((key) => !this.ticking.has(key));
      if (keys.length === 0) break;
      const acquired = this.target.tryAcquireAny();
      if (!acquired) break;
      this.tick(keys[this.nextRunningKey++ % keys.length], acquired);
    }
    this.settleDrain();
  }

  rejectQueued(error: Error): void {
    for (const queue of this.waiting.values()) for (const entry of queue) entry.reject(error);
    this.waiting.clear();
    this.deficits.clear();
    this.waitingCount = 0;
    this.settleDrain();
  }

  drain(): Promise<void> {
    this.draining = true;
    return new Promise<void>((resolve) => {
      this.drained = resolve;
      this.settleDrain();
    });
  }

  /**
   * Deficit round robin over the waiting keys until the running set is full, or until a whole round
   * admits nothing because every waiting key's running set is at `maxRows` (a key so blocked gains no deficit).
   */
  private admit(): void {
    if (this.limits.wavesOnly && this.runningCount > 0) return;
    let idleVisits = 0;
    while (this.runningCount < this.limits.maxRunning && this.waitingCount > 0 && idleVisits < this.waiting.size) {
      const keys = [...this.waiting.keys()];
      const key = keys[this.nextWaitingKey++ % keys.length];
      const queue = this.waiting.get(key)!;
      const fits = (entry: Entry): boolean => entry.signal?.aborted === true || this.runningRows(key) + entry.work.rows <= this.maxRows;
      const waitingBefore = this.waitingCount;
      let deficit = (this.deficits.get(key) ?? 0) + (fits(queue[0]) ? QUANTUM_ROWS : 0);
      while (queue.length > 0 && deficit >= queue[0].work.rows && this.runningCount < this.limits.maxRunning && fits(queue[0])) {
        const entry = queue.shift()!;
        this.waitingCount--;
        if (entry.signal?.aborted) {
          this.cancel(entry);
          continue;
        }
        deficit -= entry.work.rows;
        this.start(entry);
      }
      idleVisits = this.waitingCount < waitingBefore ? 0 : idleVisits + 1;
      if (queue.length === 0) {
        this.waiting.delete(key);
        this.deficits.delete(key);
      } else {
        this.deficits.set(key, deficit);
      }
    }
  }

  /** Rows one tick of `key` takes now: those of its running requests. */
  private runningRows(key: string): number {
    return (this.running.get(key) ?? []).reduce((sum, entry) => sum + entry.work.rows, 0);
  }

  private start(entry: Entry): void {
    this.observer.admitted(entry.work, this.engine.clock.now() - entry.enqueuedUs);
    const group = this.running.get(entry.work.key) ?? [];
    group.push(entry);
    this.running.set(entry.work.key, group);
    this.runningCount++;
    this.observer.runningChanged(this.runningCount);
  }

  /**
   * One batched denoiser call on the acquired instance for the running requests of `key`, the
   * cancelled ones dropped first; the instance goes back unused when none is left to run.
   */
  private tick(key: string, acquired: Acquired): void {
    const group = this.running.get(key)!;
    for (const entry of group.filter((e) => e.signal?.aborted)) this.finish(entry, createError('SF_ERR_CANCELLED'), true);
    const entries = this.running.get(key);
    if (!entries) return this.target.giveBack(acquired);
    const batch = [...entries];
    let wires: TensorWireRequest[];
    try {
      wires = batch.map((entry) => entry.work.stepInputs());
    } catch (err) {
      for (const entry of batch) this.finish(entry, err as Error);
      return this.target.giveBack(acquired);
    }
    this.ticking.add(key);
    const startedUs = this.engine.clock.now();
    const rows = batch.reduce((sum, entry) => sum + entry.work.rows, 0);
    const admitted = batch.filter((entry) => entry.work.dispatchedMs === undefined).map((entry) => entry.work);
    const step = this.target.run<TensorWireResult>(acquired, tensorCall(wires), admitted);
    void step.catch((err: unknown) => batch.map(() => (err instanceof Error ? err : new Error(String(err))))).then((results) => {
      this.observer.stepped(rows, (this.engine.clock.now() - startedUs) / 1e6, batch.length);
      results.forEach((result, i) => {
        const entry = batch[i];
        if (result instanceof Error) return this.finish(entry, result);
        try {
          if (entry.work.advance(result)) this.finish(entry);
        } catch (err) {
          this.finish(entry, err as Error);
        }
      });
      this.ticking.delete(key);
      this.notifyIdle();
    });
  }

  private cancel(entry: Entry): void {
    this.observer.aborted(entry.work);
    entry.reject(createError('SF_ERR_CANCELLED'));
  }

  /** Takes `entry` out of the running set, resolving it, or rejecting it with `error`. */
  private finish(entry: Entry, error?: Error, cancelled = false): void {
    const group = this.running.get(entry.work.key);
    const at = group?.indexOf(entry) ?? -1;
    if (group && at >= 0) {
      group.splice(at, 1);
      if (group.length === 0) this.running.delete(entry.work.key);
      this.runningCount--;
      this.observer.runningChanged(this.runningCount);
    }
    if (cancelled) this.cancel(entry);
    else if (error) entry.reject(error);
    else entry.resolve();
  }

  private settleDrain(): void {
    if (this.drained && this.waitingCount === 0 && this.runningCount === 0) {
      this.drained();
      this.drained = undefined;
    }
  }
}

/** The deficit each waiting key gains per round: the rows of the largest request (one with guidance). */
const QUANTUM_ROWS = 2;
