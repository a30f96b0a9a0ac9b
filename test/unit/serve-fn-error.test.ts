import { describe, expect, it } from 'vitest';
import { createError, deserializeError, serializeError, ServeFnError } from '../../src/errors/index.js';

/** What a worker thread's postMessage does to the flattened error. */
const acrossThreads = (err: unknown): Error => deserializeError(structuredClone(serializeError(err)));

describe('errors across a worker boundary', () => {
  it('keeps the cause chain, with each error\'s own stack, class of error and code', () => {
    const root = Object.assign(new RangeError('file is 0 bytes'), { code: 'ENODATA' });
    const middle = new Error('weights unreadable', { cause: root });
    const top = createError('SF_ERR_INITIALIZE_FAILED', 'm', 0, middle.message, { cause: middle });

    const back = acrossThreads(top);
    expect(back).toBeInstanceOf(ServeFnError);
    expect(back.stack).toBe(top.stack);
    const cause = back.cause as Error;
    expect(cause).toMatchObject({ name: 'Error', message: 'weights unreadable', stack: middle.stack });
    expect(cause.cause).toMatchObject({ name: 'RangeError', message: 'file is 0 bytes', stack: root.stack });
    expect((cause.cause as Error).cause).toBeUndefined();
  });

  it('keeps a cause that is not an Error as its text, and a ServeFnError cause as one', () => {
    expect((acrossThreads(new Error('outer', { cause: 'disk full' })).cause as Error).message).toBe('disk full');
    const inner = createError('SF_ERR_QUEUE_FULL');
    expect(acrossThreads(new Error('outer', { cause: inner })).cause).toMatchObject({ code: 'SF_ERR_QUEUE_FULL', statusCode: 503 });
  });

  it('cuts a chain that leads back to itself', () => {
    const looping = new Error('again');
    (looping as { cause?: unknown }).cause = looping;
    let depth = 0;
    for (let e: unknown = acrossThreads(looping); e instanceof Error; e = e.cause) depth++;
    expect(depth).toBe(9);
  });
});

describe('createError', () => {
  it('takes a last { cause } argument as the cause, not as a message value', () => {
    const cause = new Error('weights missing');
    const err = createError('SF_ERR_INITIALIZE_FAILED', 'm', 1, cause.message, { cause });
    expect(err.message).toBe("Model 'm' instance 1 failed in initialize(): weights missing");
    expect(err.cause).toBe(cause);
  });
});
