import { describe, expect, it } from 'vitest';
import { normalizeBatchPolicy, type BatchPolicyInput } from '../../src/spec/batch-policy.js';
import { PriorityQueues, type QueuedItem } from '../../src/engine/priority-queues.js';

interface Item extends QueuedItem<Item> {
  readonly name: string;
}

function setup(input: BatchPolicyInput) {
  const queues = new PriorityQueues<Item>(normalizeBatchPolicy(input, 'test'));
  const add = (name: string, levelIndex: number, enqueuedAtUs: number, expiresAtUs = Infinity): Item => {
    const item: Item = { name, entry: { enqueuedAtUs }, level: queues.levels[levelIndex]!, expiresAtUs, place: undefined };
    queues.enqueue(item);
    return item;
  };
  return { queues, add };
}

const names = (items: readonly Item[]): string[] => items.map((i) => i.name);

describe('PriorityQueues', () => {
  it('has one level without priorities, and one per level with them', () => {
    expect(setup({ maxBatchSize: 4 }).queues.levels).toHaveLength(1);
    expect(setup({ maxBatchSize: 4, priorityLevels: 3 }).queues.levels).toHaveLength(3);
  });

  it('takes the highest level first, arrival order within a level, delayed requests after the unexpired ones of their level', () => {
    const { queues, add } = setup({ maxBatchSize: 8, priorityLevels: 2 });
    const low = add('low', 1, 0);
    const late = add('late', 0, 1);
    add('high', 0, 2);
    queues.delay(late);
    add('high2', 0, 3);
    expect(queues.isWaiting(late)).toBe(false);
    expect(queues.size).toBe(4);
    expect(names(queues.take(3))).toEqual(['high', 'high2', 'late']);
    expect(queues.size).toBe(1);
    expect(low.place).toBeDefined();
    expect(names(queues.take(3))).toEqual(['low']);
    expect(low.place).toBeUndefined();
  });

  it('shows requests in the order take() takes them, until the visitor says stop, removing none', () => {
    const { queues, add } = setup({ maxBatchSize: 8, priorityLevels: 2 });
    add('low', 1, 0);
    const late = add('late', 0, 1);
    add('high', 0, 2);
    queues.delay(late);
    const seen: string[] = [];
    queues.visitInBatchOrder((item) => seen.push(item.name) < 4);
    expect(seen).toEqual(['high', 'late', 'low']);
    seen.length = 0;
    queues.visitInBatchOrder((item) => seen.push(item.name) < 2);
    expect(seen).toEqual(['high', 'late']);
    expect(queues.size).toBe(3);
  });

  it('finds the oldest request among the level heads and every delayed one', () => {
    const { queues, add } = setup({ maxBatchSize: 8, priorityLevels: 2 });
    expect(queues.oldestEnqueuedAtUs()).toBe(Infinity);
    add('a', 1, 50);
    const old = add('old', 0, 10);
    add('b', 0, 20);
    queues.delay(old);
    expect(queues.oldestEnqueuedAtUs()).toBe(10);
    queues.remove(old);
    expect(queues.oldestEnqueuedAtUs()).toBe(20);
  });

  it('counts a level full at its maxQueueSize, delayed requests included', () => {
    const { queues, add } = setup({ maxBatchSize: 8, defaultQueuePolicy: { maxQueueSize: 2 } });
    const a = add('a', 0, 0);
    queues.delay(a);
    expect(queues.isFull(queues.levels[0]!)).toBe(false);
    add('b', 0, 1);
    expect(queues.isFull(queues.levels[0]!)).toBe(true);
  });

  it('offers due requests among the next window to expire, moving the window past each', () => {
    const { queues, add } = setup({ maxBatchSize: 8 });
    add('due1', 0, 0, 5);
    add('ok1', 0, 1);
    add('due2', 0, 2, 5);
    add('ok2', 0, 3);
    add('due3', 0, 4, 5);
    const expired: string[] = [];
    queues.expireDue(10, 2, (item) => {
      expired.push(item.name);
      queues.remove(item);
    });
    expect(expired).toEqual(['due1', 'due2']);
    expect(names(queues.take(8))).toEqual(['ok1', 'ok2', 'due3']);
  });
});
