import type { ServeFnError } from '../../src/errors/index.js';

/** The error a synchronous call throws, for asserting its code and message exactly. */
export function thrown(fn: () => unknown): ServeFnError {
  try {
    fn();
  } catch (err) {
    return err as ServeFnError;
  }
  throw new Error('expected a throw');
}
