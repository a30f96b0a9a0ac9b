/**
 * The batcher's time source, in microseconds. It is injected so tests drive queue delays and
 * timeouts with a fake clock instead of sleeping.
 */
export interface Clock {
  /** Monotonic time in microseconds. */
  now(): number;
  /** Calls `fn` once, no earlier than `delayUs` microseconds from now. */
  setTimer(fn: () => void, delayUs: number): unknown;
  /** Cancels a timer from `setTimer`; a handle that already fired or was cleared is ignored. */
  clearTimer(handle: unknown): void;
}

interface SystemTimer {
  timeout: NodeJS.Timeout | undefined;
}

function nowUs(): number {
  return performance.now() * 1000;
}

function arm(timer: SystemTimer, fn: () => void, dueUs: number): void {
  timer.timeout = setTimeout(() => {
    // setTimeout measures from the event loop's cached start-of-tick time, so it can fire before
    // the delay has passed on performance.now(); in that case wait for the rest.
    if (dueUs - nowUs() > 0) {
      arm(timer, fn, dueUs);
      return;
    }
    timer.timeout = undefined;
    fn();
  }, Math.ceil(Math.max(0, dueUs - nowUs()) / 1000));
}

/** performance.now() time; timers are setTimeout rounded up to whole milliseconds, never early. */
export const systemClock: Clock = {
  now: nowUs,
  setTimer(fn, delayUs) {
    const timer: SystemTimer = { timeout: undefined };
    arm(timer, fn, nowUs() + delayUs);
    return timer;
  },
  clearTimer(handle) {
    const timer = handle as SystemTimer | undefined;
    if (timer?.timeout === undefined) return;
    clearTimeout(timer.timeout);
    timer.timeout = undefined;
  },
};
