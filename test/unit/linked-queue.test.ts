import { describe, expect, it } from 'vitest';
import { LinkedQueue } from '../../src/engine/linked-queue.js';

describe('LinkedQueue', () => {
  it('keeps insertion order and removes any element in place', () => {
    const q = new LinkedQueue<string>();
    const a = q.push('a');
    q.push('b');
    const c = q.push('c');
    q.push('d');
    q.remove(c);
    q.remove(a);
    expect([...q]).toEqual(['b', 'd']);
    expect(q.size).toBe(2);
  });

  it('lets the element just yielded be removed during iteration', () => {
    const q = new LinkedQueue<number>();
    const links = [1, 2, 3, 4].map((n) => q.push(n));
    const seen: number[] = [];
    for (const v of q) {
      seen.push(v);
      if (v % 2 === 1) q.remove(links[v - 1]);
    }
    expect(seen).toEqual([1, 2, 3, 4]);
    expect([...q]).toEqual([2, 4]);
  });

  it('visits values in order until the visitor returns false, and says whether it saw them all', () => {
    const q = new LinkedQueue<number>();
    for (const n of [1, 2, 3]) q.push(n);
    const seen: number[] = [];
    expect(q.visit((v) => seen.push(v) > 0)).toBe(true);
    expect(q.visit((v) => v < 2)).toBe(false);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('becomes empty and reusable after removing head and tail', () => {
    const q = new LinkedQueue<string>();
    const x = q.push('x');
    q.remove(x);
    expect(q.size).toBe(0);
    expect([...q]).toEqual([]);
    q.push('y');
    expect([...q]).toEqual(['y']);
  });
});
