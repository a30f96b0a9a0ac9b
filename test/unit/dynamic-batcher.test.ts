import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import { normalizeBatchPolicy, UNBATCHED_POLICY, type BatchPolicyInput } from '../../src/spec/batch-policy.js';
import { DynamicBatcher, type BatchEntry, type BatcherHooks, type SubmitOptions } from '../../src/engine/dynamic-batcher.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { settle } from '../helpers/settle.js';

const OWNER = 'Tts.speak';

interface SentBatch {
  readonly atUs: number;
  readonly payloads: string[];
  readonly entries: readonly BatchEntry<string>[];
  readonly resolve: (results: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** Settles one entry before the batch ends (BatcherHooks.execute's `answer`). */
  readonly answer: (index: number, result: string | Error) => void;
}

interface Tracked {
  status: 'pending' | 'resolved' | 'rejected';
  value?: string;
  error?: unknown;
}

function setup(input: BatchPolicyInput, idle = 1, budget?: BatcherHooks<string, string>['budget'], shape: Pick<BatcherHooks<string, string>, 'rows' | 'joins'> = {}) {
  const clock = new FakeClock();
  const state = { idle };
  const batches: SentBatch[] = [];
  const log: string[] = [];
  const hooks: BatcherHooks<string, string> = {
    idleInstances: () => state.idle,
    execute: (entries, answer) => {
      state.idle--;
      return new Promise<ReadonlyArray<string | Error>>((resolve, reject) => {
        batches.push({ atUs: clock.now(), payloads: entries.map((e) => e.payload), entries, resolve: resolve as (results: unknown) => void, reject, answer });
      });
    },
    budget,
    ...shape,
  };
  const batcher = new DynamicBatcher<string, string>(OWNER, normalizeBatchPolicy(input, OWNER), hooks, clock);

  function submit(payload: string, options?: SubmitOptions): Tracked {
    const tracked: Tracked = { status: 'pending' };
    batcher.submit(payload, options).then(
      (value) => {
        Object.assign(tracked, { status: 'resolved', value });
        log.push(`${payload}:ok`);
      },
      (error: unknown) => {
        Object.assign(tracked, { status: 'rejected', error });
        log.push(`${payload}:err`);
      },
    );
    return tracked;
  }

  /** Resolves batch i (by default with the upper-cased payloads) without freeing its instance. */
  async function complete(i: number, results?: unknown): Promise<void> {
    batches[i].resolve(results === undefined ? batches[i].payloads.map((p) => p.toUpperCase()) : results);
    await settle();
  }

  /** What the runtime does when an instance comes back. */
  async function free(count = 1): Promise<void> {
    state.idle += count;
    batcher.notifyIdle();
    await settle();
  }

  async function finish(i: number, results?: unknown): Promise<void> {
    await complete(i, results);
    await free();
  }

  const sent = (): { at: number; payloads: string[] }[] => batches.map((b) => ({ at: b.atUs, payloads: b.payloads }));
  return { clock, state, batches, log, batcher, submit, complete, free, finish, sent };
}

function submitAll(h: ReturnType<typeof setup>, payloads: string[], options?: SubmitOptions): Tracked[] {
  return payloads.map((p) => h.submit(p, options));
}

const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `r${i}`);

function expectError(tracked: Tracked, code: string, statusCode: number): ServeFnError {
  expect(tracked.status).toBe('rejected');
  expect(tracked.error).toBeInstanceOf(ServeFnError);
  expect(tracked.error).toMatchObject({ code, statusCode });
  return tracked.error as ServeFnError;
}

describe('DynamicBatcher: batch formation', () => {
  it('waits until the oldest request has waited maxQueueDelayUs, then sends everything queued', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 });
    const [a] = submitAll(h, ['a']);
    await h.clock.advance(100);
    h.submit('b');
    await h.clock.advance(100);
    h.submit('c');
    await h.clock.advance(799);
    expect(h.sent()).toEqual([]);
    expect(h.batcher.pendingCount).toBe(3);
    await h.clock.advance(1);
    expect(h.sent()).toEqual([{ at: 1000, payloads: ['a', 'b', 'c'] }]);
    expect(h.clock.armed).toBe(0);
    expect([h.batcher.pendingCount, h.batcher.inflightCount]).toEqual([0, 3]);
    await h.finish(0);
    expect(a).toEqual({ status: 'resolved', value: 'A' });
    expect(h.log).toEqual(['a:ok', 'b:ok', 'c:ok']);
    expect(h.batcher.inflightCount).toBe(0);
  });

  it('measures the delay from the oldest request still queued, batch after batch', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 });
    h.submit('a');
    await h.clock.advance(1000);
    await h.finish(0);
    await h.clock.advance(500);
    h.submit('d');
    await h.clock.advance(999);
    expect(h.sent()).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.sent()).toEqual([{ at: 1000, payloads: ['a'] }, { at: 2500, payloads: ['d'] }]);
  });

  it('with maxQueueDelayUs 0 sends at once, and requests that arrive meanwhile go together next', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 0 });
    submitAll(h, ['a', 'b', 'c']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a'] }]);
    expect(h.batcher.pendingCount).toBe(2);
    await h.clock.advance(50);
    await h.finish(0);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a'] }, { at: 50, payloads: ['b', 'c'] }]);
    expect(h.clock.armed).toBe(0);
  });

  it('sends maxBatchSize at once when that many are queued, the rest after the delay', async () => {
    const h = setup({ maxBatchSize: 3, maxQueueDelayUs: 1000 });
    submitAll(h, names(7));
    expect(h.sent()).toEqual([{ at: 0, payloads: ['r0', 'r1', 'r2'] }]);
    await h.clock.advance(10);
    await h.finish(0);
    expect(h.sent()[1]).toEqual({ at: 10, payloads: ['r3', 'r4', 'r5'] });
    await h.clock.advance(10);
    await h.finish(1);
    expect(h.batches).toHaveLength(2);
    await h.clock.advance(979);
    expect(h.batches).toHaveLength(2);
    await h.clock.advance(1);
    expect(h.sent()[2]).toEqual({ at: 1000, payloads: ['r6'] });
  });

  it('sends the largest preferred size that can be formed, then waits for the delay with the remainder', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000, preferredBatchSizes: [4, 2] }, 0);
    submitAll(h, names(7));
    await h.clock.advance(10);
    await h.free();
    expect(h.sent()).toEqual([{ at: 10, payloads: ['r0', 'r1', 'r2', 'r3'] }]);
    await h.clock.advance(10);
    await h.finish(0);
    expect(h.sent()[1]).toEqual({ at: 20, payloads: ['r4', 'r5'] });
    await h.clock.advance(10);
    await h.finish(1);
    await h.clock.advance(969);
    expect(h.batches).toHaveLength(2);
    await h.clock.advance(1);
    expect(h.sent()[2]).toEqual({ at: 1000, payloads: ['r6'] });
  });

  it('sends as soon as a preferred size is reached, without waiting for the delay', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000, preferredBatchSizes: [3] });
    submitAll(h, ['a', 'b']);
    await h.clock.advance(100);
    expect(h.batches).toHaveLength(0);
    h.submit('c');
    expect(h.sent()).toEqual([{ at: 100, payloads: ['a', 'b', 'c'] }]);
    expect(h.clock.armed).toBe(0);
  });

  it('prefers a preferred size over maxBatchSize when more than max are queued', async () => {
    const h = setup({ maxBatchSize: 8, preferredBatchSizes: [3, 6] }, 0);
    submitAll(h, names(10));
    await h.free(2);
    expect(h.sent()).toEqual([
      { at: 0, payloads: ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'] },
      { at: 0, payloads: ['r6', 'r7', 'r8'] },
    ]);
    expect(h.batcher.pendingCount).toBe(1);
  });

  it('sends several batches at once when several instances are idle', async () => {
    const h = setup({ maxBatchSize: 2 }, 0);
    submitAll(h, names(5));
    await h.clock.advance(30);
    await h.free(3);
    expect(h.sent()).toEqual([
      { at: 30, payloads: ['r0', 'r1'] },
      { at: 30, payloads: ['r2', 'r3'] },
      { at: 30, payloads: ['r4'] },
    ]);
    expect(h.state.idle).toBe(0);
    expect([h.batcher.pendingCount, h.batcher.inflightCount]).toEqual([0, 5]);
  });

  it('with two idle instances sends a full batch at once and the remainder after the delay', async () => {
    const h = setup({ maxBatchSize: 4, maxQueueDelayUs: 500 }, 2);
    submitAll(h, names(6));
    expect(h.sent()).toEqual([{ at: 0, payloads: ['r0', 'r1', 'r2', 'r3'] }]);
    await h.clock.advance(499);
    expect(h.batches).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.sent()[1]).toEqual({ at: 500, payloads: ['r4', 'r5'] });
  });

  it('keeps requests queued with no idle instance and no timer, and sends at once on notifyIdle once the delay passed', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 }, 0);
    h.submit('a');
    expect(h.clock.armed).toBe(0);
    await h.clock.advance(2000);
    expect(h.batches).toHaveLength(0);
    await h.free();
    expect(h.sent()).toEqual([{ at: 2000, payloads: ['a'] }]);
  });

  it('on notifyIdle before the delay passed, arms the timer for exactly the remaining delay', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 }, 0);
    h.submit('a');
    await h.clock.advance(400);
    await h.free();
    expect(h.batches).toHaveLength(0);
    expect(h.clock.armed).toBe(1);
    await h.clock.advance(599);
    expect(h.batches).toHaveLength(0);
    await h.clock.advance(1);
    expect(h.sent()).toEqual([{ at: 1000, payloads: ['a'] }]);
  });

  it('waits for notifyIdle when the idle instance was taken elsewhere before the delay ran out', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 });
    h.submit('a');
    h.state.idle = 0;
    await h.clock.advance(1000);
    expect(h.batches).toHaveLength(0);
    expect(h.clock.armed).toBe(0);
    await h.clock.advance(500);
    await h.free();
    expect(h.sent()).toEqual([{ at: 1500, payloads: ['a'] }]);
  });

  it('does not dispatch twice when execute() calls notifyIdle() synchronously', async () => {
    const clock = new FakeClock();
    const sent: string[][] = [];
    let idle = 0;
    const hooks: BatcherHooks<string, string> = {
      idleInstances: () => idle,
      execute: (entries) => {
        idle--;
        sent.push(entries.map((e) => e.payload));
        batcher.notifyIdle();
        return new Promise<string[]>(() => undefined);
      },
    };
    const batcher = new DynamicBatcher(OWNER, normalizeBatchPolicy({ maxBatchSize: 1 }, OWNER), hooks, clock);
    for (const p of ['a', 'b', 'c']) void batcher.submit(p);
    idle = 2;
    batcher.notifyIdle();
    expect(sent).toEqual([['a'], ['b']]);
    expect([batcher.pendingCount, batcher.inflightCount]).toEqual([1, 2]);
  });

  it('gives each entry its payload, enqueue time and priority level', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 100, priorityLevels: 3, defaultPriorityLevel: 2 });
    h.submit('a');
    await h.clock.advance(30);
    h.submit('b', { priority: 3 });
    h.submit('c', { priority: 0 });
    await h.clock.advance(70);
    expect(h.batches[0].entries).toEqual([
      { payload: 'a', enqueuedAtUs: 0, priority: 2 },
      { payload: 'c', enqueuedAtUs: 30, priority: 2 },
      { payload: 'b', enqueuedAtUs: 30, priority: 3 },
    ]);
    expect(Object.isFrozen(h.batches[0].entries[0])).toBe(true);
  });

  it('gives priority 0 to entries when the policy has no priority levels', async () => {
    const h = setup({ maxBatchSize: 8 });
    h.submit('a');
    expect(h.batches[0].entries).toEqual([{ payload: 'a', enqueuedAtUs: 0, priority: 0 }]);
  });

  it('sends what is queued at once under UNBATCHED_POLICY, grouped for the idle instance', async () => {
    const h = setup(UNBATCHED_POLICY, 0);
    submitAll(h, ['a', 'b', 'c']);
    await h.free(1);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a', 'b', 'c'] }]);
  });

  it('uses the system clock when none is given', async () => {
    const before = performance.now() * 1000;
    let entry: BatchEntry<string> | undefined;
    const batcher = new DynamicBatcher<string, string>(OWNER, UNBATCHED_POLICY, {
      idleInstances: () => 1,
      execute: async (entries) => {
        entry = entries[0];
        return ['A'];
      },
    });
    await expect(batcher.submit('a')).resolves.toBe('A');
    const after = performance.now() * 1000;
    expect(entry!.enqueuedAtUs).toBeGreaterThanOrEqual(before);
    expect(entry!.enqueuedAtUs).toBeLessThanOrEqual(after);
  });

  it('keeps exact order and composition with 2 000 requests, half of them cancelled', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const controllers: AbortController[] = [];
    for (let i = 0; i < 2000; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      h.submit(`r${i}`, { signal: controller.signal });
    }
    controllers.forEach((c, i) => i % 2 === 0 && c.abort());
    expect(h.batcher.pendingCount).toBe(1000);
    await h.free(200);
    expect(h.batches).toHaveLength(125);
    expect(h.batches.every((b) => b.payloads.length === 8)).toBe(true);
    expect(h.batches.flatMap((b) => b.payloads)).toEqual(Array.from({ length: 1000 }, (_, i) => `r${2 * i + 1}`));
    expect(h.clock.armed).toBe(0);
  });
});

describe('DynamicBatcher: a padded budget (TEI --max-batch-tokens)', () => {
  /** Each payload costs its length, as a text costs its tokens. */
  const byLength = (limit: number): NonNullable<BatcherHooks<string, string>['budget']> => ({ limit, cost: (payload) => payload.length });

  it('closes a batch before the request that would take rows × longest over the limit, and sends it without waiting', async () => {
    const h = setup({ maxBatchSize: 10, maxQueueDelayUs: 1000 }, 1, byLength(12));
    // 1+1+1+6 = 9 tokens, but padded to the longest the four cost 6 × 4 = 24.
    submitAll(h, ['a', 'b', 'c', 'dddddd', 'e']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a', 'b', 'c'] }]);
    await h.finish(0);
    // 6 × 2 = 12 fits: 'dddddd' and 'e' go together once the delay has passed, as a batch that is not full.
    expect(h.batches).toHaveLength(1);
    await h.clock.advance(1000);
    expect(h.sent()[1]).toEqual({ at: 1000, payloads: ['dddddd', 'e'] });
  });

  it('sends a request over the limit on its own, at once', async () => {
    const h = setup({ maxBatchSize: 10, maxQueueDelayUs: 1000 }, 1, byLength(4));
    submitAll(h, ['xxxxxxxx', 'y']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['xxxxxxxx'] }]);
  });

  it('batches requests queued together by submitAll, where one submit at a time would send the first alone', async () => {
    const h = setup({ maxBatchSize: 10, maxQueueDelayUs: 0 }, 1, byLength(100));
    const results = h.batcher.submitAll(['a', 'b', 'c']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a', 'b', 'c'] }]);
    await h.complete(0);
    expect(await Promise.all(results)).toEqual(['A', 'B', 'C']);
  });

  it('with minFill, batches the oldest request with the queued ones nearest its cost, then the rest', async () => {
    const h = setup({ maxBatchSize: 3, maxQueueDelayUs: 0 }, 0, { ...byLength(100), minFill: 0 });
    submitAll(h, ['aaaa', 'bbbbbbbbbb', 'c', 'ddd', 'eeeeeeeee', 'ff']);
    await h.free();
    // The oldest (4) goes with the two nearest it (3, then 2), not with the next two in arrival order.
    expect(h.sent()[0].payloads).toEqual(['aaaa', 'ddd', 'ff']);
    await h.finish(0);
    // Then the oldest left (10), with 9 and 1: nothing waits behind requests that keep arriving near others.
    expect(h.sent()[1].payloads).toEqual(['bbbbbbbbbb', 'c', 'eeeeeeeee']);
  });

  it('with minFill, leaves out a near request that would take the batch over the budget, and takes one that fits', async () => {
    const h = setup({ maxBatchSize: 10, maxQueueDelayUs: 0 }, 0, { ...byLength(12), minFill: 0 });
    submitAll(h, ['aaaa', 'bbbbbbb', 'cc']);
    await h.free();
    // 4 and 7 padded are 14 > 12; 4 and 2 are 8.
    expect(h.sent()[0].payloads).toEqual(['aaaa', 'cc']);
  });

  it('with minFill, stops at the first request that would leave less than that share of the batch real, and sends it next', async () => {
    const h = setup({ maxBatchSize: 10, maxQueueDelayUs: 0 }, 0, { ...byLength(1000), minFill: 0.8 });
    submitAll(h, ['aaaaaaaaaa', 'dd', 'bbbbbbbbb', 'cccccccc']);
    await h.free();
    // 10 + 9 + 8 real of 30 padded is 90 %; adding 2 would make it 29 of 40, 72 %.
    expect(h.sent()[0].payloads).toEqual(['aaaaaaaaaa', 'bbbbbbbbb', 'cccccccc']);
    await h.finish(0);
    expect(h.sent()[1].payloads).toEqual(['dd']);
  });

  it('still closes at maxBatchSize when the budget is not spent', async () => {
    const h = setup({ maxBatchSize: 2, maxQueueDelayUs: 1000 }, 1, byLength(100));
    submitAll(h, ['a', 'b', 'c']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a', 'b'] }]);
  });
});

describe("DynamicBatcher: batches by rows and shape (Triton's max_batch_size rows, enforce_equal_shape_tensors)", () => {
  /** A payload 'a3' is a request of kind (shape signature) 'a' with 3 rows. */
  const tensorLike: Pick<BatcherHooks<string, string>, 'rows' | 'joins'> = { rows: (p) => Number(p.slice(1)), joins: (first, next) => first[0] === next[0] };

  it('counts rows, not requests: a 3-row and a 2-row request with maxBatchSize 4 go as two batches', async () => {
    const h = setup({ maxBatchSize: 4, maxQueueDelayUs: 1000 }, 1, undefined, tensorLike);
    submitAll(h, ['a3', 'a2']);
    // The 2-row request does not fit beside the 3-row one, so waiting cannot grow the batch: it goes at once.
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a3'] }]);
    await h.finish(0);
    expect(h.batches).toHaveLength(1);
    await h.clock.advance(1000);
    expect(h.sent()[1]).toEqual({ at: 1000, payloads: ['a2'] });
  });

  it('sends a batch that reaches maxBatchSize rows at once, however few its requests', async () => {
    const h = setup({ maxBatchSize: 4, maxQueueDelayUs: 1000 }, 1, undefined, tensorLike);
    submitAll(h, ['a2', 'a2', 'a1']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a2', 'a2'] }]);
  });

  it('closes the batch when the next request has another signature: interleaved A, B, A go as three batches', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 }, 1, undefined, tensorLike);
    submitAll(h, ['a1', 'b1', 'a1']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a1'] }]);
    await h.finish(0);
    // B is followed by an A, so it cannot grow either.
    expect(h.sent()[1]).toEqual({ at: 0, payloads: ['b1'] });
    await h.finish(1);
    // The last A could still be joined by another A, so it waits out the delay.
    expect(h.batches).toHaveLength(2);
    await h.clock.advance(1000);
    expect(h.sent()[2]).toEqual({ at: 1000, payloads: ['a1'] });
  });

  it('joins equal signatures in arrival order until one differs, on as many idle instances as it takes', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 0 }, 3, undefined, tensorLike);
    h.batcher.submitAll(['a1', 'a2', 'b1', 'b3', 'a1']);
    expect(h.sent().map((b) => b.payloads)).toEqual([['a1', 'a2'], ['b1', 'b3'], ['a1']]);
  });

  it('counts preferred batch sizes in rows', async () => {
    const h = setup({ maxBatchSize: 8, preferredBatchSizes: [4], maxQueueDelayUs: 1000 }, 1, undefined, tensorLike);
    submitAll(h, ['a1', 'a3', 'a1']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a1', 'a3'] }]);
  });

  it('still runs a request of more rows than maxBatchSize, alone and at once', async () => {
    const h = setup({ maxBatchSize: 4, maxQueueDelayUs: 1000 }, 1, undefined, tensorLike);
    submitAll(h, ['a6', 'a1']);
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a6'] }]);
  });
});

describe('DynamicBatcher: priorities', () => {
  const levels = { maxBatchSize: 8, priorityLevels: 3, defaultPriorityLevel: 2 };

  it('forms batches from the highest priority first, arrival order within a level', async () => {
    const h = setup(levels, 0);
    h.submit('x', { priority: 3 });
    h.submit('y');
    h.submit('z', { priority: 1 });
    h.submit('w', { priority: 0 });
    h.submit('v', { priority: 1 });
    await h.free();
    expect(h.sent()).toEqual([{ at: 0, payloads: ['z', 'v', 'y', 'w', 'x'] }]);
    expect(h.batches[0].entries.map((e) => e.priority)).toEqual([1, 1, 2, 2, 3]);
  });

  it('splits by priority when more than maxBatchSize are queued', async () => {
    const h = setup({ ...levels, maxBatchSize: 2 }, 0);
    h.submit('x', { priority: 3 });
    h.submit('y');
    h.submit('z', { priority: 1 });
    h.submit('w');
    h.submit('v', { priority: 1 });
    await h.free(3);
    expect(h.sent().map((b) => b.payloads)).toEqual([['z', 'v'], ['y', 'w'], ['x']]);
  });

  it('rejects priorities outside 0..priorityLevels with SF_ERR_PRIORITY_INVALID and never queues them', async () => {
    const h = setup({ ...levels, priorityLevels: 2 }, 0);
    const bad = [3, -1, 1.5, Number.NaN].map((priority) => h.submit('bad', { priority }));
    await settle();
    const error = expectError(bad[0], 'SF_ERR_PRIORITY_INVALID', 400);
    expect(error.message).toBe('Priority 3 is out of range: this model has priority levels 1..2 (0 = default).');
    for (const t of bad) expectError(t, 'SF_ERR_PRIORITY_INVALID', 400);
    expect(h.batcher.pendingCount).toBe(0);
    await h.free();
    expect(h.batches).toHaveLength(0);
  });

  it('accepts only priority 0 or none when the policy has no priority levels', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const high = h.submit('high', { priority: 1 });
    h.submit('zero', { priority: 0 });
    await settle();
    expect((expectError(high, 'SF_ERR_PRIORITY_INVALID', 400)).message).toBe(
      'Priority 1 is out of range: this model has no priority levels, only 0 (default) is accepted.',
    );
    await h.free();
    expect(h.sent()).toEqual([{ at: 0, payloads: ['zero'] }]);
  });
});

describe('DynamicBatcher: queue policies', () => {
  it('rejects with SF_ERR_QUEUE_FULL per priority level, counting only queued requests', async () => {
    const h = setup(
      {
        maxBatchSize: 8,
        priorityLevels: 2,
        defaultPriorityLevel: 2,
        defaultQueuePolicy: { maxQueueSize: 2 },
        priorityQueuePolicy: { 1: { maxQueueSize: 1 } },
      },
      0,
    );
    const [a, b, c] = submitAll(h, ['a', 'b', 'c']);
    const h1 = h.submit('h1', { priority: 1 });
    const h2 = h.submit('h2', { priority: 1 });
    await settle();
    expect(expectError(c, 'SF_ERR_QUEUE_FULL', 503).message).toBe('Exceeds maximum queue size');
    expectError(h2, 'SF_ERR_QUEUE_FULL', 503);
    expect([a.status, b.status, h1.status]).toEqual(['pending', 'pending', 'pending']);
    expect(h.batcher.pendingCount).toBe(3);
    await h.free();
    expect(h.sent()).toEqual([{ at: 0, payloads: ['h1', 'a', 'b'] }]);
    const [d, e] = submitAll(h, ['d', 'e']);
    const f = h.submit('f', { priority: 1 });
    await settle();
    expect([d.status, e.status, f.status]).toEqual(['pending', 'pending', 'pending']);
    expect(h.batcher.pendingCount).toBe(3);
  });

  it('REJECT: removes and rejects each request with SF_ERR_TIMEOUT the moment its timeout expires', async () => {
    const h = setup({ maxBatchSize: 8, defaultQueuePolicy: { defaultTimeoutUs: 500 } }, 0);
    const controller = new AbortController();
    const a = h.submit('a', { signal: controller.signal });
    await h.clock.advance(200);
    const b = h.submit('b');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    await h.clock.advance(299);
    expect([a.status, b.status]).toEqual(['pending', 'pending']);
    await h.clock.advance(1);
    expect(expectError(a, 'SF_ERR_TIMEOUT', 503).message).toBe('Request timeout expired');
    expect(b.status).toBe('pending');
    expect(h.batcher.pendingCount).toBe(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    await h.clock.advance(200);
    expectError(b, 'SF_ERR_TIMEOUT', 503);
    expect([h.batcher.pendingCount, h.clock.armed]).toEqual([0, 0]);
    await h.free();
    expect(h.batches).toHaveLength(0);
  });

  it('applies the timeout only while queued, not once dispatched', async () => {
    const h = setup({ maxBatchSize: 8, defaultQueuePolicy: { defaultTimeoutUs: 500 } });
    const a = h.submit('a');
    expect(h.clock.armed).toBe(0);
    await h.clock.advance(1000);
    await h.complete(0);
    expect(a).toEqual({ status: 'resolved', value: 'A' });
  });

  it('rejects a request whose timeout is due at the moment its batch forms, before executing it', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 100, defaultQueuePolicy: { allowTimeoutOverride: true } });
    const b = h.submit('b');
    const a = h.submit('a', { timeoutUs: 100 });
    await h.clock.advance(100);
    expect(h.sent()).toEqual([{ at: 100, payloads: ['b'] }]);
    expectError(a, 'SF_ERR_TIMEOUT', 503);
    await h.complete(0);
    expect(b.status).toBe('resolved');
  });

  it('lets a request only lower the default timeout when overrides are allowed', async () => {
    const h = setup({ maxBatchSize: 8, defaultQueuePolicy: { defaultTimeoutUs: 500, allowTimeoutOverride: true } }, 0);
    const lower = h.submit('lower', { timeoutUs: 200 });
    const higher = h.submit('higher', { timeoutUs: 900 });
    const zero = h.submit('zero', { timeoutUs: 0 });
    const none = h.submit('none');
    await h.clock.advance(200);
    expect(h.log).toEqual(['lower:err']);
    expectError(lower, 'SF_ERR_TIMEOUT', 503);
    await h.clock.advance(299);
    expect(h.log).toEqual(['lower:err']);
    await h.clock.advance(1);
    expect(h.log).toEqual(['lower:err', 'higher:err', 'zero:err', 'none:err']);
    for (const t of [higher, zero, none]) expectError(t, 'SF_ERR_TIMEOUT', 503);
  });

  it('ignores a requested timeout when overrides are not allowed', async () => {
    const h = setup({ maxBatchSize: 8, defaultQueuePolicy: { defaultTimeoutUs: 500 } }, 0);
    const a = h.submit('a', { timeoutUs: 100 });
    await h.clock.advance(499);
    expect(a.status).toBe('pending');
    await h.clock.advance(1);
    expectError(a, 'SF_ERR_TIMEOUT', 503);
  });

  it("applies the request's timeout when the default is none and overrides are allowed", async () => {
    const h = setup({ maxBatchSize: 8, defaultQueuePolicy: { allowTimeoutOverride: true } }, 0);
    const a = h.submit('a', { timeoutUs: 300 });
    const b = h.submit('b');
    await h.clock.advance(300);
    expectError(a, 'SF_ERR_TIMEOUT', 503);
    expect(h.clock.armed).toBe(0);
    await h.clock.advance(100_000);
    expect(b.status).toBe('pending');
  });

  it('rejects a negative or non-integer timeoutUs with SF_ERR_TIMEOUT_INVALID', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const bad = [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY].map((timeoutUs) => h.submit('bad', { timeoutUs }));
    await settle();
    expect(expectError(bad[0], 'SF_ERR_TIMEOUT_INVALID', 400).message).toBe(
      'Timeout -1 is invalid: give a non-negative integer number of microseconds.',
    );
    for (const t of bad) expectError(t, 'SF_ERR_TIMEOUT_INVALID', 400);
    expect(h.batcher.pendingCount).toBe(0);
  });

  it('DELAY: moves an expired request behind every unexpired request, and still runs it', async () => {
    const h = setup({ maxBatchSize: 2, defaultQueuePolicy: { allowTimeoutOverride: true, timeoutAction: 'DELAY' } }, 0);
    const [a] = [h.submit('a', { timeoutUs: 100 }), h.submit('b'), h.submit('c')];
    await h.clock.advance(100);
    expect(a.status).toBe('pending');
    expect(h.batcher.pendingCount).toBe(3);
    await h.free();
    expect(h.sent()).toEqual([{ at: 100, payloads: ['b', 'c'] }]);
    await h.finish(0);
    expect(h.sent()[1]).toEqual({ at: 100, payloads: ['a'] });
    await h.complete(1);
    expect(a).toEqual({ status: 'resolved', value: 'A' });
    expect(h.clock.armed).toBe(0);
  });

  it('DELAY: expired requests keep their expiry order behind requests that have not expired', async () => {
    const h = setup({ maxBatchSize: 8, defaultQueuePolicy: { defaultTimeoutUs: 100, timeoutAction: 'DELAY' } }, 0);
    h.submit('a');
    await h.clock.advance(50);
    h.submit('b');
    await h.clock.advance(100);
    h.submit('c');
    await h.clock.advance(50);
    await h.free();
    expect(h.sent()).toEqual([{ at: 200, payloads: ['c', 'a', 'b'] }]);
  });

  it('DELAY: an expired request stays ahead of lower priority levels', async () => {
    const h = setup(
      { maxBatchSize: 8, priorityLevels: 2, defaultPriorityLevel: 2, defaultQueuePolicy: { defaultTimeoutUs: 100, timeoutAction: 'DELAY' } },
      0,
    );
    h.submit('a', { priority: 1 });
    await h.clock.advance(50);
    h.submit('b', { priority: 1 });
    h.submit('c');
    await h.clock.advance(50);
    await h.free();
    expect(h.sent()).toEqual([{ at: 100, payloads: ['b', 'a', 'c'] }]);
  });

  it('uses the per-level queue policy over the default one', async () => {
    const h = setup(
      {
        maxBatchSize: 8,
        priorityLevels: 2,
        defaultPriorityLevel: 2,
        defaultQueuePolicy: { defaultTimeoutUs: 100 },
        priorityQueuePolicy: { 1: { timeoutAction: 'DELAY' } },
      },
      0,
    );
    const high = h.submit('high', { priority: 1 });
    const low = h.submit('low');
    await h.clock.advance(100);
    expect(high.status).toBe('pending');
    expectError(low, 'SF_ERR_TIMEOUT', 503);
  });
});

describe('DynamicBatcher: cancellation', () => {
  it('removes a queued request whose signal aborts, rejects it with SF_ERR_CANCELLED and never executes it', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const controller = new AbortController();
    const a = h.submit('a', { signal: controller.signal });
    const b = h.submit('b');
    controller.abort();
    await settle();
    expect(expectError(a, 'SF_ERR_CANCELLED', 499).message).toBe('Request was cancelled by the client before it ran.');
    expect(h.batcher.pendingCount).toBe(1);
    await h.free();
    expect(h.sent()).toEqual([{ at: 0, payloads: ['b'] }]);
    await h.complete(0);
    expect(b.status).toBe('resolved');
  });

  it('rejects a request whose signal is already aborted without queueing it', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const a = h.submit('a', { signal: AbortSignal.abort() });
    await settle();
    expectError(a, 'SF_ERR_CANCELLED', 499);
    expect(h.batcher.pendingCount).toBe(0);
    await h.free();
    expect(h.batches).toHaveLength(0);
  });

  it('ignores an abort once the request is dispatched, and stops listening to the signal', async () => {
    const h = setup({ maxBatchSize: 8 });
    const controller = new AbortController();
    const a = h.submit('a', { signal: controller.signal });
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a'] }]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    controller.abort();
    await h.complete(0);
    expect(a).toEqual({ status: 'resolved', value: 'A' });
  });

  it('re-arms the delay from the new oldest request when the oldest is cancelled', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 });
    const controller = new AbortController();
    h.submit('a', { signal: controller.signal });
    await h.clock.advance(300);
    h.submit('b');
    await h.clock.advance(100);
    controller.abort();
    await h.clock.advance(600);
    expect(h.batches).toHaveLength(0);
    await h.clock.advance(299);
    expect(h.batches).toHaveLength(0);
    await h.clock.advance(1);
    expect(h.sent()).toEqual([{ at: 1300, payloads: ['b'] }]);
  });

  it('leaves no timer armed once every queued request is cancelled', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000, defaultQueuePolicy: { defaultTimeoutUs: 5000 } });
    const controller = new AbortController();
    submitAll(h, ['a', 'b'], { signal: controller.signal });
    expect(h.clock.armed).toBe(3);
    controller.abort();
    expect(h.clock.armed).toBe(0);
    expect(h.batcher.pendingCount).toBe(0);
  });
});

describe('DynamicBatcher: results', () => {
  it('settles each request with its own entry; an Error entry rejects only its request', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const [a, b, c] = submitAll(h, ['a', 'b', 'c']);
    await h.free();
    const bad = new Error('bad b');
    await h.complete(0, ['A', bad, 'C']);
    expect(a).toEqual({ status: 'resolved', value: 'A' });
    expect(b.status).toBe('rejected');
    expect(b.error).toBe(bad);
    expect(c).toEqual({ status: 'resolved', value: 'C' });
  });

  it('rejects every request of the batch with the error execute() rejects with', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const tracked = submitAll(h, ['a', 'b']);
    await h.free();
    const boom = new Error('boom');
    h.batches[0].reject(boom);
    await settle();
    for (const t of tracked) expect(t).toEqual({ status: 'rejected', error: boom });
    expect(h.batcher.inflightCount).toBe(0);
  });

  it('rejects every request of the batch when execute() throws synchronously, and keeps batching', async () => {
    const clock = new FakeClock();
    const boom = new Error('sync boom');
    let calls = 0;
    const batcher = new DynamicBatcher<string, string>(
      OWNER,
      normalizeBatchPolicy({ maxBatchSize: 2 }, OWNER),
      {
        idleInstances: () => 1,
        execute: (entries) => {
          calls++;
          if (calls === 1) throw boom;
          return Promise.resolve(entries.map((e) => e.payload.toUpperCase()));
        },
      },
      clock,
    );
    const first = batcher.submit('a');
    await expect(first).rejects.toBe(boom);
    await expect(batcher.submit('b')).resolves.toBe('B');
    expect(batcher.inflightCount).toBe(0);
  });

  it('rejects the batch with SF_ERR_BATCH_RESULT_NOT_ARRAY when execute() resolves a non-array', async () => {
    for (const [result, got] of [[{ a: 1 }, 'Object'], ['AB', 'string'], [null, 'null'], [undefined, 'undefined']] as const) {
      const h = setup({ maxBatchSize: 8 }, 0);
      const tracked = submitAll(h, ['a', 'b']);
      await h.free();
      h.batches[0].resolve(result);
      await settle();
      for (const t of tracked) {
        expect(expectError(t, 'SF_ERR_BATCH_RESULT_NOT_ARRAY', 500).message).toBe(
          `Tts.speak must return an array for its batch, got ${got}.`,
        );
      }
    }
  });

  it('rejects the batch with SF_ERR_BATCH_RESULT_LENGTH when execute() resolves the wrong number of results', async () => {
    const h = setup({ maxBatchSize: 8 }, 0);
    const tracked = submitAll(h, ['a', 'b']);
    await h.free();
    await h.complete(0, ['A']);
    for (const t of tracked) {
      expect(expectError(t, 'SF_ERR_BATCH_RESULT_LENGTH', 500).message).toBe(
        'Tts.speak returned 1 results for a batch of 2 requests: a batched method (@Batch, or execute(requests)) must return one result (or Error) per request, in order.',
      );
    }
  });

  it('without preserveOrdering settles each batch as soon as it finishes', async () => {
    const h = setup({ maxBatchSize: 2 }, 0);
    submitAll(h, ['a', 'b', 'c', 'd']);
    await h.free(2);
    await h.complete(1);
    expect(h.log).toEqual(['c:ok', 'd:ok']);
    await h.complete(0);
    expect(h.log).toEqual(['c:ok', 'd:ok', 'a:ok', 'b:ok']);
  });

  it('with preserveOrdering holds a batch that finishes early until earlier requests have settled', async () => {
    const h = setup({ maxBatchSize: 2, preserveOrdering: true }, 0);
    const tracked = submitAll(h, ['a', 'b', 'c', 'd']);
    await h.free(2);
    expect(h.sent().map((b) => b.payloads)).toEqual([['a', 'b'], ['c', 'd']]);
    h.batches[1].reject(new Error('late'));
    await settle();
    expect(h.log).toEqual([]);
    expect(h.batcher.inflightCount).toBe(4);
    await h.complete(0);
    expect(h.log).toEqual(['a:ok', 'b:ok', 'c:err', 'd:err']);
    expect(tracked.map((t) => t.status)).toEqual(['resolved', 'resolved', 'rejected', 'rejected']);
    expect(h.batcher.inflightCount).toBe(0);
  });

  it('settles a request answered before its batch ended at once, and ignores its place in the batch result', async () => {
    const h = setup(UNBATCHED_POLICY, 0);
    const tracked = submitAll(h, ['a', 'b', 'c']);
    await h.free();
    h.batches[0].answer(0, 'A');
    h.batches[0].answer(1, new Error('b failed'));
    h.batches[0].answer(1, 'again');
    await settle();
    expect(h.log).toEqual(['a:ok', 'b:err']);
    expect(h.batcher.inflightCount).toBe(1);
    await h.complete(0, ['ignored', 'ignored', 'C']);
    expect(tracked.map((t) => t.value ?? (t.error as Error).message)).toEqual(['A', 'b failed', 'C']);
    expect(h.batcher.inflightCount).toBe(0);
  });

  it('with preserveOrdering holds an early answer until earlier requests have settled', async () => {
    const h = setup({ maxBatchSize: 2, preserveOrdering: true }, 0);
    submitAll(h, ['a', 'b']);
    await h.free();
    h.batches[0].answer(1, 'B');
    await settle();
    expect(h.log).toEqual([]);
    h.batches[0].answer(0, 'A');
    await settle();
    expect(h.log).toEqual(['a:ok', 'b:ok']);
  });

  it('with preserveOrdering delivers in arrival order even when a later, higher-priority request ran first', async () => {
    const h = setup({ maxBatchSize: 1, preserveOrdering: true, priorityLevels: 2, defaultPriorityLevel: 2 }, 0);
    h.submit('x');
    h.submit('y', { priority: 1 });
    await h.free(2);
    expect(h.sent().map((b) => b.payloads)).toEqual([['y'], ['x']]);
    await h.complete(0);
    expect(h.log).toEqual([]);
    await h.complete(1);
    expect(h.log).toEqual(['x:ok', 'y:ok']);
  });

  it('with preserveOrdering releases held results when an earlier queued request is cancelled', async () => {
    const h = setup({ maxBatchSize: 1, preserveOrdering: true, priorityLevels: 2, defaultPriorityLevel: 2 }, 0);
    const controller = new AbortController();
    h.submit('x', { signal: controller.signal });
    h.submit('y', { priority: 1 });
    await h.free();
    await h.complete(0);
    expect(h.log).toEqual([]);
    controller.abort();
    await settle();
    expect(h.log).toEqual(['x:err', 'y:ok']);
    expect([h.batcher.pendingCount, h.batcher.inflightCount]).toEqual([0, 0]);
  });
});

describe('DynamicBatcher: drain', () => {
  it('rejects new submits with SF_ERR_DRAINING, runs queued requests without waiting out the delay, and resolves when empty', async () => {
    const h = setup({ maxBatchSize: 8, maxQueueDelayUs: 1000 });
    const [a, b] = submitAll(h, ['a', 'b']);
    let drained = false;
    void h.batcher.drain().then(() => {
      drained = true;
    });
    expect(h.sent()).toEqual([{ at: 0, payloads: ['a', 'b'] }]);
    const late = h.submit('late');
    await settle();
    expect(expectError(late, 'SF_ERR_DRAINING', 503).message).toBe(
      'Server is stopping, scheduler for model has stopped accepting new inference requests',
    );
    expect([drained, h.batcher.pendingCount, h.batcher.inflightCount]).toEqual([false, 0, 2]);
    await h.complete(0);
    expect([a.status, b.status, drained]).toEqual(['resolved', 'resolved', true]);
    expect(h.clock.armed).toBe(0);
  });

  it('waits for an instance to run what is still queued', async () => {
    const h = setup({ maxBatchSize: 1 }, 0);
    submitAll(h, ['a', 'b']);
    let drained = false;
    const drain = h.batcher.drain();
    void drain.then(() => {
      drained = true;
    });
    expect(h.batcher.drain()).toBe(drain);
    await h.free();
    await h.finish(0);
    expect(h.sent().map((b) => b.payloads)).toEqual([['a'], ['b']]);
    expect(drained).toBe(false);
    await h.complete(1);
    expect(drained).toBe(true);
  });

  it('rejectQueued fails every queued request with the error given, leaves dispatched ones running, and lets drain end', async () => {
    const h = setup({ maxBatchSize: 1, maxQueueDelayUs: 1000, preserveOrdering: true });
    const [running, ...queued] = submitAll(h, ['a', 'b', 'c']);
    const drain = h.batcher.drain();
    h.batcher.rejectQueued(new ServeFnError('SF_ERR_MODEL_UNAVAILABLE', 'no instance'));
    await settle();
    for (const t of queued) expectError(t, 'SF_ERR_MODEL_UNAVAILABLE', 503);
    expect([running.status, h.batcher.pendingCount, h.batcher.inflightCount]).toEqual(['pending', 0, 1]);
    await h.complete(0);
    expect(running.status).toBe('resolved');
    await expect(drain).resolves.toBeUndefined();
  });

  it('resolves at once when nothing is queued or running', async () => {
    const h = setup({ maxBatchSize: 8 });
    await expect(h.batcher.drain()).resolves.toBeUndefined();
  });
});

describe('DynamicBatcher: full batches queued on busy instances', () => {
  function withQueueBehind(input: BatchPolicyInput, standby: number) {
    const clock = new FakeClock();
    const state = { idle: 1, standby };
    const batches: { payloads: string[]; on: 'idle' | 'standby'; resolve: (results: unknown) => void }[] = [];
    const batcher = new DynamicBatcher<string, string>(
      OWNER,
      normalizeBatchPolicy(input, OWNER),
      {
        idleInstances: () => state.idle,
        queueBehindInstances: () => state.standby,
        execute: (entries) => {
          const on = state.idle > 0 ? 'idle' : 'standby';
          if (on === 'idle') state.idle--;
          else state.standby--;
          return new Promise((resolve) => batches.push({ payloads: entries.map((e) => e.payload), on, resolve: resolve as (results: unknown) => void }));
        },
      },
      clock,
    );
    const results: string[] = [];
    const submit = (payloads: string[], options?: SubmitOptions): void => {
      for (const p of payloads) void batcher.submit(p, options).then((v) => results.push(v), (e: Error) => results.push(`${p}:${e.message}`));
    };
    return { clock, state, batches, batcher, results, submit };
  }

  it('queues only full batches; a smaller one waits for a free instance, where later requests can join it', async () => {
    const h = withQueueBehind({ maxBatchSize: 2, maxQueueDelayUs: 1000 }, 1);
    h.submit(['a', 'b', 'c', 'd', 'e']);
    await settle();
    expect(h.batches.map((b) => [b.on, b.payloads])).toEqual([
      ['idle', ['a', 'b']],
      ['standby', ['c', 'd']],
    ]);
    await h.clock.advance(5000);
    expect(h.batches).toHaveLength(2);
    h.submit(['f']);
    h.state.idle = 1;
    h.batcher.notifyIdle();
    expect(h.batches.at(-1)).toMatchObject({ on: 'idle', payloads: ['e', 'f'] });
  });

  it('queues as many full batches as instances can take, and none without the hook', async () => {
    const h = withQueueBehind({ maxBatchSize: 2 }, 2);
    h.state.idle = 0;
    h.submit(names(7));
    await settle();
    expect(h.batches.map((b) => b.payloads)).toEqual([['r0', 'r1'], ['r2', 'r3']]);
    h.state.standby = 1;
    h.batcher.notifyIdle();
    expect(h.batches.map((b) => b.payloads).at(-1)).toEqual(['r4', 'r5']);

    const plain = setup({ maxBatchSize: 2 }, 0);
    submitAll(plain, names(4));
    await settle();
    expect(plain.batches).toHaveLength(0);
  });

  it('queues the full batch of unexpired requests: one whose queue timeout ran out is rejected, not run', async () => {
    const h = withQueueBehind({ maxBatchSize: 2, defaultQueuePolicy: { defaultTimeoutUs: 100 } }, 0);
    h.state.idle = 0;
    h.submit(['a', 'b']);
    await h.clock.advance(110);
    h.submit(['c', 'd']);
    h.state.standby = 1;
    h.batcher.notifyIdle();
    await settle();
    expect(h.batches.map((b) => [b.on, b.payloads])).toEqual([['standby', ['c', 'd']]]);
    expect(h.results).toEqual(['a:Request timeout expired', 'b:Request timeout expired']);
  });
});
