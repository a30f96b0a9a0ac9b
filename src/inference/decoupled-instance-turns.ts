import { createError } from '../errors/index.js';

/**
 * Wakes the requests of a decoupled model that wait for a free instance: the runtime calls
 * `notify()` whenever its pool has an instance free again (a stream ended, or an instance came
 * back from a crash restart).
 */
export class InstanceTurns {
  private readonly waiters = new Set<() => void>();

  /** Ends every current wait, in the order the waits began. */
  notify(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Resolves at the next `notify()`, or at `deadlineMs` (epoch ms) so the caller sees its timeout.
   * Rejects with SF_ERR_CANCELLED once `signal` aborts, and with SF_ERR_TIMEOUT once the deadline passed.
   */
  wait(signal?: AbortSignal, deadlineMs?: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(createError('SF_ERR_CANCELLED'));
      const remainingMs = deadlineMs === undefined ? undefined : deadlineMs - Date.now();
      if (remainingMs !== undefined && remainingMs <= 0) return reject(createError('SF_ERR_TIMEOUT'));
      const settle = (finish: () => void): void => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        signal?.removeEventListener('abort', onAbort);
        finish();
      };
      const wake = (): void => settle(resolve);
      const onAbort = (): void => settle(() => reject(createError('SF_ERR_CANCELLED')));
      const timer = remainingMs === undefined ? undefined : setTimeout(wake, remainingMs);
      this.waiters.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
