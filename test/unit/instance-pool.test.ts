import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Endpoint, Instances, Model } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import { InstancePool, type PoolEvents } from '../../src/engine/instance-pool.js';
import type { RestartPolicy } from '../../src/spec/restart-policy.js';
import type { InstanceEvents, ModelInstance } from '../../src/engine/model-instance.js';
import type { ExecuteOutcome } from '../../src/wire/wire-format.js';
import { noStreams } from '../helpers/no-streams.js';

@Model({ name: 'pooled' })
@Instances(3)
class Pooled {
  @Endpoint('/pooled') run(): void {}
}

/** A model instance whose start and stop the test settles by hand. */
class FakeInstance implements ModelInstance {
  readonly openStream = noStreams.openStream;
  readonly openSocket = noStreams.openSocket;
  stopped = false;
  canQueueBehind = true;
  private settleStart?: { resolve(): void; reject(err: Error): void };
  stopError?: Error;

  constructor(
    readonly index: number,
    readonly events: InstanceEvents,
  ) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.settleStart = { resolve, reject };
    });
  }

  started(): void {
    this.settleStart!.resolve();
  }

  failed(message: string): void {
    this.settleStart!.reject(new Error(message));
  }

  crash(reason = 'worker exited with code 1'): void {
    this.events.onCrash(this, reason);
  }

  execute(): Promise<ExecuteOutcome> {
    return Promise.resolve({ results: [], computeStartMs: 0, computeEndMs: 0 });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.stopError) throw this.stopError;
  }
}

interface Harness {
  pool: InstancePool;
  created: FakeInstance[];
  idle: number;
  standby: number;
  restarts: number[];
  heldDown: string[];
  logs: string[];
  /** The latest instance created for `index`. */
  latest(index: number): FakeInstance;
}

function harness(policy?: RestartPolicy): Harness {
  const h = { created: [] as FakeInstance[], idle: 0, standby: 0, restarts: [] as number[], heldDown: [] as string[], logs: [] as string[] } as Harness;
  const events: PoolEvents = {
    onIdle: () => h.idle++,
    onQueueBehind: () => h.standby++,
    onRestart: (index) => h.restarts.push(index),
    onHeldDown: (index, error) => h.heldDown.push(`${index}: ${error.code}`),
    onLog: (level, message) => h.logs.push(`${level}: ${message}`),
  };
  h.pool = new InstancePool(
    buildDefinition(Pooled),
    (index, instanceEvents) => {
      const instance = new FakeInstance(index, instanceEvents);
      h.created.push(instance);
      return instance;
    },
    events,
    policy,
  );
  h.latest = (index) => h.created.filter((i) => i.index === index).at(-1)!;
  return h;
}

async function started(h: Harness): Promise<void> {
  const start = h.pool.start();
  for (const instance of h.created) instance.started();
  await start;
}

/** Lets promise callbacks (a restarted instance's start) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe('InstancePool start', () => {
  it('creates every instance at once, then offers them all as idle in index order', async () => {
    const h = harness();
    const start = h.pool.start();
    expect(h.created.map((i) => i.index)).toEqual([0, 1, 2]);
    expect(h.pool.idleCount).toBe(0);
    h.created[2].started();
    h.created[0].started();
    h.created[1].started();
    await start;
    expect(h.pool.size).toBe(3);
    expect(h.pool.idleCount).toBe(3);
    expect([h.pool.acquire().index, h.pool.acquire().index, h.pool.acquire().index]).toEqual([0, 1, 2]);
  });

  it('stops the instances that started when one fails, and throws its error', async () => {
    const h = harness();
    const start = h.pool.start();
    h.created[0].started();
    h.created[1].failed('initialize failed');
    h.created[2].started();
    await expect(start).rejects.toThrow('initialize failed');
    expect(h.created.map((i) => i.stopped)).toEqual([true, false, true]);
    expect(h.pool.idleCount).toBe(0);
  });
});

describe('InstancePool acquire and release', () => {
  it('hands an instance out once and takes it back, announcing that it is idle', async () => {
    const h = harness();
    await started(h);
    const a = h.pool.acquire();
    h.pool.acquire();
    h.pool.acquire();
    expect(h.pool.idleCount).toBe(0);
    expect(() => h.pool.acquire()).toThrow('no idle instance of pooled');
    h.pool.release(a);
    expect(h.pool.idleCount).toBe(1);
    expect(h.idle).toBe(1);
    expect(h.pool.acquire()).toBe(a);
  });
});

describe('InstancePool crash recovery', () => {
  it('replaces a crashed busy instance, logs why, counts the restart and offers the new one when started', async () => {
    const h = harness();
    await started(h);
    const busy = h.pool.acquire();
    (busy as FakeInstance).crash('worker exited with code 7');
    expect(h.logs).toEqual(["error: model 'pooled' instance 0 died (worker exited with code 7)"]);
    expect(h.restarts).toEqual([0]);
    const replacement = h.latest(0);
    expect(replacement).not.toBe(busy);
    expect(h.pool.idleCount).toBe(2);

    h.pool.release(busy);
    expect(h.pool.idleCount).toBe(2);
    replacement.started();
    await settle();
    expect(h.pool.idleCount).toBe(3);
    expect(h.idle).toBe(1);
  });

  it('takes a crashed idle instance out of the idle list at once', async () => {
    const h = harness();
    await started(h);
    h.created[1].crash();
    expect(h.pool.idleCount).toBe(2);
    expect([h.pool.acquire().index, h.pool.acquire().index]).toEqual([0, 2]);
  });

  it('ignores a second crash report of the same instance', async () => {
    const h = harness();
    await started(h);
    h.created[0].crash();
    h.created[0].crash();
    expect(h.restarts).toEqual([0]);
    expect(h.created).toHaveLength(4);
  });

  it('retries a restart whose start fails, logging the failure', async () => {
    const h = harness();
    await started(h);
    h.created[2].crash();
    h.latest(2).failed('port in use');
    await settle();
    expect(h.logs).toContain("error: restart of 'pooled' instance 2 failed: port in use");
    expect(h.restarts).toEqual([2, 2]);
    h.latest(2).started();
    await settle();
    expect(h.pool.idleCount).toBe(3);
  });

  it('does not restart after stop, and ignores releases after stop', async () => {
    const h = harness();
    await started(h);
    const busy = h.pool.acquire();
    await h.pool.stop();
    expect(h.created.every((i) => i.stopped)).toBe(true);
    h.created[1].crash();
    h.pool.release(busy);
    expect(h.restarts).toEqual([]);
    expect(h.pool.idleCount).toBe(0);
  });

  it('logs instances whose stop fails and still stops the others', async () => {
    const h = harness();
    await started(h);
    h.created[1].stopError = new Error("Model 'pooled' instance 1 failed in finalize(): disk full");
    await h.pool.stop();
    expect(h.created.every((i) => i.stopped)).toBe(true);
    expect(h.logs).toEqual(["error: Model 'pooled' instance 1 failed in finalize(): disk full"]);
  });
});

describe('InstancePool restart rate limit', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('leaves an instance down once it crashed maxRestarts times within the window, until the window passes', async () => {
    const h = harness({ maxRestarts: 2, windowMs: 10_000 });
    await started(h);
    h.latest(0).crash();
    h.latest(0).started();
    await settle();
    vi.advanceTimersByTime(1_000);
    h.latest(0).crash();
    h.latest(0).started();
    await settle();
    vi.advanceTimersByTime(1_000);
    h.latest(0).crash();
    expect(h.restarts).toEqual([0, 0]);
    expect(h.logs.at(-1)).toBe(
      "error: Model 'pooled' instance 0 crashed 2 times in 10000 ms; it is not restarted until the window passes. Next try in 8000 ms.",
    );
    expect(h.pool.idleCount).toBe(2);

    vi.advanceTimersByTime(7_999);
    expect(h.restarts).toEqual([0, 0]);
    vi.advanceTimersByTime(1);
    expect(h.restarts).toEqual([0, 0, 0]);
    h.latest(0).started();
    await settle();
    expect(h.pool.idleCount).toBe(3);
  });

  it('stays available while one instance is up, and turns unavailable only once every instance is held down', async () => {
    const h = harness({ maxRestarts: 0, windowMs: 10_000 });
    await started(h);
    h.latest(0).crash();
    vi.advanceTimersByTime(2_000);
    h.latest(1).crash();
    expect(h.heldDown).toEqual(['0: SF_ERR_INSTANCE_RESTART_LIMIT', '1: SF_ERR_INSTANCE_RESTART_LIMIT']);
    expect(h.pool.available).toBe(true);
    expect(h.pool.acquire().index).toBe(2);

    vi.advanceTimersByTime(1_000);
    h.latest(2).crash();
    expect(h.pool.available).toBe(false);
    const error = h.pool.unavailableError();
    expect(error.code).toBe('SF_ERR_MODEL_UNAVAILABLE');
    expect(error.statusCode).toBe(503);
    // Instance 0 went down first, at 1_000_000, so its restart is the next one.
    expect(error.message).toBe("Model 'pooled' has no running instance: every instance crashed past its restart limit. The next restart is in 7000 ms.");

    vi.advanceTimersByTime(7_000);
    expect(h.restarts).toEqual([0]);
    expect(h.pool.available).toBe(true);
    h.latest(0).started();
    await settle();
    expect(h.pool.idleCount).toBe(1);
  });

  it('forgets crashes older than the window', async () => {
    const h = harness({ maxRestarts: 1, windowMs: 5_000 });
    await started(h);
    h.latest(1).crash();
    h.latest(1).started();
    await settle();
    vi.advanceTimersByTime(5_000);
    h.latest(1).crash();
    expect(h.restarts).toEqual([1, 1]);
  });
});

describe('InstancePool: a batch queued behind a running one', () => {
  it('offers an instance acquired for a batch to queue one more, and frees it only when both ended', async () => {
    const h = harness();
    await started(h);
    const a = h.pool.acquire({ queueBehind: true });
    expect([h.pool.idleCount, h.pool.queueBehindCount]).toEqual([2, 1]);
    expect(h.pool.acquireToQueueBehind()).toBe(a);
    expect(h.pool.queueBehindCount).toBe(0);
    expect(() => h.pool.acquireToQueueBehind()).toThrow('no instance of pooled can queue a batch');

    h.pool.release(a);
    expect([h.pool.idleCount, h.pool.queueBehindCount, h.idle, h.standby]).toEqual([2, 1, 0, 1]);
    h.pool.release(a);
    expect([h.pool.idleCount, h.pool.queueBehindCount, h.idle, h.standby]).toEqual([3, 0, 1, 1]);
  });

  it('never queues behind a stream or a sequence step (plain acquire), nor on an instance that cannot queue', async () => {
    const h = harness();
    await started(h);
    h.pool.acquire();
    h.created[1].canQueueBehind = false;
    h.pool.acquire({ queueBehind: true });
    expect(h.pool.queueBehindCount).toBe(0);
    expect(h.pool.acquireIndex(2)).toBe(h.created[2]);
    expect(h.pool.queueBehindCount).toBe(0);
  });

  it('forgets a crashed instance with a queued batch; its late releases change nothing', async () => {
    const h = harness();
    await started(h);
    const a = h.pool.acquire({ queueBehind: true });
    h.pool.acquireToQueueBehind();
    const b = h.pool.acquire({ queueBehind: true });
    h.latest(a.index).crash();
    expect([h.pool.idleCount, h.pool.queueBehindCount]).toEqual([1, 1]);
    h.pool.release(a);
    h.pool.release(a);
    expect([h.pool.idleCount, h.pool.queueBehindCount]).toEqual([1, 1]);
    expect(h.pool.acquireToQueueBehind()).toBe(b);
  });
});
