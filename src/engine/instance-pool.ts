import { systemClock, type Clock } from './clock.js';
import type { ModelDefinition } from '../definition/model-definition.js';
import { createError, type ServeFnError } from '../errors/index.js';
import type { InstanceEvents, InstanceFactory, ModelInstance } from './model-instance.js';
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from '../spec/restart-policy.js';

/** What the pool reads of its model: a decorated model's definition, or a repository model version. */
export type PoolOwner = Pick<ModelDefinition, 'name'> & { readonly instances: Pick<ModelDefinition['instances'], 'count'> };

export interface PoolEvents {
  /** An instance became free to take a batch. */
  onIdle(instance: ModelInstance): void;
  /** A busy instance can take a batch queued behind its running one again (see acquireToQueueBehind). */
  onQueueBehind?(): void;
  onRestart(index: number): void;
  /** An instance died; its restart follows (rate-limited). */
  onDown?(index: number): void;
  /** Instance `index` runs again after a restart (an onIdle for it follows). */
  onUp?(index: number): void;
  /**
   * Instance `index` hit its restart limit (`error`, SF_ERR_INSTANCE_RESTART_LIMIT) and stays down
   * until the window passes; `available` tells whether any instance is left to take requests.
   */
  onHeldDown?(index: number, error: ServeFnError): void;
  onLog(level: 'info' | 'warn' | 'error', message: string): void;
}

/** An instance taken for a batch, and whether the batch waits behind the one it runs. */
export interface Acquired {
  readonly instance: ModelInstance;
  readonly queuedBehind: boolean;
}

/**
 * The instances of one model (Triton's instance group): tracks which are idle, hands them out one
 * batch at a time, and restarts the ones that die, rate-limited so a crash loop does not spin.
 *
 * A worker instance running a batch may also take one more, queued behind it (acquireToQueueBehind): the
 * HTTP thread hears that a batch ended and sends the next one only when it gets to that message,
 * and on a busy machine that gap left instances idle 5–10 % of the time (measured: 2.4–5.8 ms
 * between batches of ~45 ms with two instances on two cores). The batcher only queues batches that
 * cannot grow (full ones), so batching is not worse for it.
 */
export class InstancePool {
  private readonly instances: (ModelInstance | undefined)[] = [];
  private readonly idle: ModelInstance[] = [];
  /** Busy instances that can take one batch queued behind the running one. */
  private readonly canQueueBehind: ModelInstance[] = [];
  /** Busy instances with a batch queued behind the running one. */
  private readonly queuedBehind = new Set<ModelInstance>();
  private readonly up = new Set<ModelInstance>();
  private readonly restarts: number[][] = [];
  /** Instances past their restart limit, by index, with when (the clock's ms) their next restart is due. */
  private readonly heldDown = new Map<number, number>();
  private stopped = false;

  constructor(
    private readonly definition: PoolOwner,
    private readonly factory: InstanceFactory,
    private readonly events: PoolEvents,
    private readonly restartPolicy: RestartPolicy = DEFAULT_RESTART_POLICY,
    /** The engine's one clock: restart windows are read on it, as every queue delay is. */
    private readonly clock: Clock = systemClock,
  ) {}

  private nowMs(): number {
    return this.clock.now() / 1000;
  }

  get size(): number {
    return this.definition.instances.count;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  get queueBehindCount(): number {
    return this.canQueueBehind.length;
  }

  /**
   * False once every instance is past its restart limit: nothing would run a queued request before
   * the window passes, so callers fail requests with `unavailableError()` instead of queueing them.
   * An instance being restarted still counts, since it takes requests as soon as it is up.
   */
  get available(): boolean {
    return this.heldDown.size < this.size;
  }

  /** SF_ERR_MODEL_UNAVAILABLE, naming when the next held-down instance is restarted. */
  unavailableError(): ServeFnError {
    const nextMs = Math.max(0, Math.round(Math.min(...this.heldDown.values()) - this.nowMs()));
    return createError('SF_ERR_MODEL_UNAVAILABLE', this.definition.name, nextMs);
  }

  /** Starts every instance in parallel; if one fails, the others are stopped and the error is thrown. */
  async start(): Promise<void> {
    const started = await Promise.allSettled(
      Array.from({ length: this.size }, async (_, index) => {
        const instance = this.factory(index, this.instanceEvents);
        this.instances[index] = instance;
        this.restarts[index] = [];
        await instance.start();
        return instance;
      }),
    );
    const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failure) {
      await Promise.allSettled(
        started.flatMap((s) => (s.status === 'fulfilled' ? [s.value.stop()] : [])),
      );
      throw failure.reason;
    }
    for (const s of started) {
      if (s.status !== 'fulfilled') continue;
      this.up.add(s.value);
      this.idle.push(s.value);
    }
  }

  /** The instances that are up, busy or idle (a dead one is absent until its restart finishes). */
  running(): readonly ModelInstance[] {
    return [...this.up];
  }

  /** Whether instance `index` is idle, without taking it. */
  isIdle(index: number): boolean {
    return this.idle.some((i) => i.index === index);
  }

  /** Takes instance `index` if it is idle (sequences are bound to one instance). */
  acquireIndex(index: number): ModelInstance | undefined {
    const at = this.idle.findIndex((i) => i.index === index);
    return at < 0 ? undefined : this.idle.splice(at, 1)[0];
  }

  /**
   * Takes an idle instance; callers check idleCount first. With `queueBehind` (a batch, not a stream
   * or a sequence step, which may hold the instance for long), it may take a batch queued behind.
   */
  acquire(options: { readonly queueBehind?: boolean } = {}): ModelInstance {
    const instance = this.idle.shift();
    if (!instance) throw new Error(`no idle instance of ${this.definition.name}`);
    if (options.queueBehind && instance.canQueueBehind) this.canQueueBehind.push(instance);
    return instance;
  }

  /**
   * Takes an instance for a batch: an idle one, or with none idle, a busy one to queue it behind the
   * batch it runs (`queuedBehind`); callers check idleCount + queueBehindCount first.
   */
  acquireForBatch(): Acquired {
    if (this.idle.length > 0) return { instance: this.acquire({ queueBehind: true }), queuedBehind: false };
    return { instance: this.acquireToQueueBehind(), queuedBehind: true };
  }

  /** Takes a busy instance to queue a batch behind the one it runs; callers check queueBehindCount first. */
  acquireToQueueBehind(): ModelInstance {
    const instance = this.canQueueBehind.shift();
    if (!instance) throw new Error(`no instance of ${this.definition.name} can queue a batch`);
    this.queuedBehind.add(instance);
    return instance;
  }

  /** Called once per acquire and per acquireToQueueBehind, when that call ends. */
  release(instance: ModelInstance): void {
    if (this.stopped || this.instances[instance.index] !== instance) return;
    if (this.queuedBehind.delete(instance)) {
      // The queued batch runs now, so one more may queue behind it.
      this.canQueueBehind.push(instance);
      this.events.onQueueBehind?.();
      return;
    }
    const at = this.canQueueBehind.indexOf(instance);
    if (at >= 0) this.canQueueBehind.splice(at, 1);
    this.idle.push(instance);
    this.events.onIdle(instance);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.idle.length = 0;
    this.canQueueBehind.length = 0;
    this.queuedBehind.clear();
    this.up.clear();
    const running = this.instances.filter((i): i is ModelInstance => i !== undefined);
    const results = await Promise.allSettled(running.map((i) => i.stop()));
    for (const r of results) if (r.status === 'rejected') this.events.onLog('error', String((r.reason as Error)?.message ?? r.reason));
  }

  private readonly instanceEvents: InstanceEvents = {
    onCrash: (instance, reason) => this.onCrash(instance, reason),
  };

  private onCrash(instance: ModelInstance, reason: string): void {
    const index = instance.index;
    if (this.stopped || this.instances[index] !== instance) return;
    this.instances[index] = undefined;
    this.up.delete(instance);
    for (const list of [this.idle, this.canQueueBehind]) {
      const at = list.indexOf(instance);
      if (at >= 0) list.splice(at, 1);
    }
    this.queuedBehind.delete(instance);
    this.events.onLog('error', `model '${this.definition.name}' instance ${index} died (${reason})`);
    this.events.onDown?.(index);
    this.scheduleRestart(index);
  }

  private scheduleRestart(index: number): void {
    const now = this.nowMs();
    const recent = this.restarts[index].filter((t) => now - t < this.restartPolicy.windowMs);
    this.restarts[index] = recent;
    if (recent.length >= this.restartPolicy.maxRestarts) {
      // With maxRestarts 0 there is no earlier restart: the window starts at this crash.
      const waitMs = Math.ceil((recent[0] ?? now) + this.restartPolicy.windowMs - now);
      const limit = createError('SF_ERR_INSTANCE_RESTART_LIMIT', this.definition.name, index, recent.length, this.restartPolicy.windowMs);
      this.events.onLog('error', `${limit.message} Next try in ${waitMs} ms.`);
      this.heldDown.set(index, now + waitMs);
      setTimeout(() => {
        this.heldDown.delete(index);
        this.restart(index);
      }, waitMs).unref();
      this.events.onHeldDown?.(index, limit);
      return;
    }
    this.restart(index);
  }

  private restart(index: number): void {
    if (this.stopped) return;
    this.restarts[index].push(this.nowMs());
    const instance = this.factory(index, this.instanceEvents);
    this.instances[index] = instance;
    this.events.onRestart(index);
    instance.start().then(
      () => {
        if (this.stopped || this.instances[index] !== instance) return;
        this.up.add(instance);
        this.events.onUp?.(index);
        this.release(instance);
      },
      (err: unknown) => {
        this.events.onLog('error', `restart of '${this.definition.name}' instance ${index} failed: ${(err as Error).message}`);
        if (this.instances[index] === instance) {
          this.instances[index] = undefined;
          this.scheduleRestart(index);
        }
      },
    );
  }
}
