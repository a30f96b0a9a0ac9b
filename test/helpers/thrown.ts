import { expect } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';

/** The error a synchronous call throws, for asserting its code and message exactly. */
export function thrown(fn: () => unknown): ServeFnError {
  try {
    fn();
  } catch (err) {
    return err as ServeFnError;
  }
  throw new Error('expected a throw');
}

/** The ServeFnError a promise rejects with; a fulfilled promise or another error fails the test. */
export async function serveFnFailure(promise: Promise<unknown>): Promise<ServeFnError> {
  const error = await promise.then(() => undefined, (err: unknown) => err);
  expect(error).toBeInstanceOf(ServeFnError);
  return error as ServeFnError;
}
