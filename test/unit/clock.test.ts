import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/engine/clock.js';

describe('systemClock', () => {
  let perfMs = 0;

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    perfMs = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => perfMs);
  });

  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  /** Advances setTimeout time and performance.now() together; `lagMs` makes performance.now() fall behind. */
  function advance(ms: number, lagMs = 0): void {
    perfMs += ms - lagMs;
    vi.advanceTimersByTime(ms);
  }

  it('reads performance.now() in microseconds', () => {
    perfMs = 12.5;
    expect(systemClock.now()).toBe(12_500);
  });

  it('rounds a timer up to whole milliseconds so it never fires early', () => {
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const fn = vi.fn();
    systemClock.setTimer(fn, 1500);
    expect(setTimeoutSpy).toHaveBeenCalledWith(expect.any(Function), 2);
    advance(1);
    expect(fn).not.toHaveBeenCalled();
    advance(1);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('fires a timer with no delay on the next timer turn', () => {
    const fn = vi.fn();
    systemClock.setTimer(fn, 0);
    expect(fn).not.toHaveBeenCalled();
    advance(0);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('waits for the rest when setTimeout fires before performance.now() reaches the due time', () => {
    const fn = vi.fn();
    systemClock.setTimer(fn, 2000);
    advance(2, 0.4);
    expect(fn).not.toHaveBeenCalled();
    advance(1);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('cancels a timer, also after it re-armed itself', () => {
    const first = vi.fn();
    systemClock.clearTimer(systemClock.setTimer(first, 1000));
    const second = vi.fn();
    const handle = systemClock.setTimer(second, 2000);
    advance(2, 0.4);
    systemClock.clearTimer(handle);
    advance(10);
    expect(first).not.toHaveBeenCalled();
    expect(second).not.toHaveBeenCalled();
  });

  it('ignores clearing a timer that already fired', () => {
    const fn = vi.fn();
    const handle = systemClock.setTimer(fn, 1000);
    advance(1);
    expect(() => systemClock.clearTimer(handle)).not.toThrow();
    expect(fn).toHaveBeenCalledTimes(1);
  });
});
