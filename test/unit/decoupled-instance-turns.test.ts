import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InstanceTurns } from '../../src/inference/decoupled-instance-turns.js';

describe('InstanceTurns', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const state = (p: Promise<unknown>): Promise<string> => {
    let s = 'pending';
    p.then(() => (s = 'resolved'), (e: { code?: string }) => (s = `rejected ${e.code}`));
    return vi.advanceTimersByTimeAsync(0).then(() => s);
  };

  it('notify() ends every wait, in the order the waits began', async () => {
    const turns = new InstanceTurns();
    const order: number[] = [];
    const waits = [1, 2, 3].map((i) => turns.wait().then(() => order.push(i)));
    expect(await state(waits[0])).toBe('pending');
    turns.notify();
    await Promise.all(waits);
    expect(order).toEqual([1, 2, 3]);
  });

  it('a wait without a deadline lasts until notify(), with no timer', async () => {
    const turns = new InstanceTurns();
    const wait = turns.wait();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await state(wait)).toBe('pending');
    turns.notify();
    expect(await state(wait)).toBe('resolved');
  });

  it('rejects with SF_ERR_CANCELLED when the signal aborts, before or during the wait', async () => {
    const turns = new InstanceTurns();
    const abort = new AbortController();
    const wait = turns.wait(abort.signal);
    abort.abort();
    expect(await state(wait)).toBe('rejected SF_ERR_CANCELLED');
    expect(await state(turns.wait(abort.signal))).toBe('rejected SF_ERR_CANCELLED');
  });

  it('wakes at the deadline, then rejects with SF_ERR_TIMEOUT once it has passed', async () => {
    const turns = new InstanceTurns();
    const deadline = Date.now() + 100;
    const wait = turns.wait(undefined, deadline);
    await vi.advanceTimersByTimeAsync(99);
    expect(await state(wait)).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(await state(wait)).toBe('resolved');
    expect(await state(turns.wait(undefined, deadline))).toBe('rejected SF_ERR_TIMEOUT');
  });

  it('a finished wait is not woken again', async () => {
    const turns = new InstanceTurns();
    const abort = new AbortController();
    const wait = turns.wait(abort.signal);
    turns.notify();
    expect(await state(wait)).toBe('resolved');
    abort.abort();
    expect(await state(wait)).toBe('resolved');
    expect(vi.getTimerCount()).toBe(0);
  });
});
