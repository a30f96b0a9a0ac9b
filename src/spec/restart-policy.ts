export interface RestartPolicy {
  /** Most restarts of one instance within `windowMs` before it is left down until the window passes. */
  readonly maxRestarts: number;
  readonly windowMs: number;
}

/**
 * Five restarts of one instance within a minute, then it stays down for the rest of the minute:
 * a rare crash costs nothing, a crash loop does not spin the CPU.
 */
export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxRestarts: 5, windowMs: 60_000 };
