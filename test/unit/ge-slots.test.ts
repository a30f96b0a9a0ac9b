import { describe, expect, it } from 'vitest';
import { ExecutionSlots } from '../../src/backends/npu/ge-slots.js';

describe('ExecutionSlots', () => {
  it('hands out every idle slot up to the number wanted, lowest first', async () => {
    const slots = new ExecutionSlots(4);
    expect(await slots.acquire(3)).toEqual([0, 1, 2]);
    expect(slots.idle).toBe(1);
    expect(await slots.acquire(5)).toEqual([3]);
    expect(slots.idle).toBe(0);
  });

  it('makes callers wait while every slot is busy and serves them in arrival order', async () => {
    const slots = new ExecutionSlots(2);
    const first = await slots.acquire(2);
    const served: string[] = [];
    const b = slots.acquire(2).then((got) => served.push(`b:${got.join(',')}`));
    const c = slots.acquire(1).then((got) => served.push(`c:${got.join(',')}`));
    await Promise.resolve();
    expect(served).toEqual([]);
    slots.release(first[1]);
    await b;
    expect(served).toEqual(['b:1']);
    slots.release(first[0]);
    await c;
    expect(served).toEqual(['b:1', 'c:0']);
    expect(slots.idle).toBe(0);
  });

  it('hands a waiter every slot released with the one that woke it, up to what it wants, and the rest to the next waiter', async () => {
    const slots = new ExecutionSlots(4);
    const first = await slots.acquire(8);
    const second = slots.acquire(3);
    const third = slots.acquire(8);
    slots.release(...first);
    expect(await second).toEqual([0, 1, 2]);
    expect(await third).toEqual([3]);
    expect(slots.idle).toBe(0);
  });

  it('does not let a newcomer overtake a waiting caller', async () => {
    const slots = new ExecutionSlots(1);
    const [only] = await slots.acquire(1);
    const order: string[] = [];
    const waiting = slots.acquire(1).then(([slot]) => {
      order.push('waiting');
      slots.release(slot);
    });
    slots.release(only);
    const newcomer = slots.acquire(1).then(() => order.push('newcomer'));
    await Promise.all([waiting, newcomer]);
    expect(order).toEqual(['waiting', 'newcomer']);
  });
});
