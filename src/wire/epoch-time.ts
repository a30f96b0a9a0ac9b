import { performance } from 'node:perf_hooks';

const timeOrigin = performance.timeOrigin;

/**
 * Milliseconds since the epoch, comparable across threads (this thread's `timeOrigin + now()`):
 * both sides of the thread boundary stamp their timings with it.
 */
export const now = (): number => timeOrigin + performance.now();
