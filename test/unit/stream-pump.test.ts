import { describe, expect, it } from 'vitest';
import { createError } from '../../src/errors/index.js';
import type { StreamEvent } from '../../src/runtime/stream-event.js';
import { StreamPump } from '../../src/runtime/stream-pump.js';
import { settle } from '../helpers/settle.js';

function counting(limit: number, log: string[]): AsyncGenerator<number> {
  return (async function* () {
    try {
      for (let i = 0; i < limit; i++) {
        log.push(`produce ${i}`);
        yield i;
      }
    } finally {
      log.push('finally');
    }
  })();
}


describe('StreamPump', () => {
  it('produces only as many items as it has credit for', async () => {
    const log: string[] = [];
    const events: StreamEvent[] = [];
    const pump = new StreamPump(async () => counting(10, log), 2, (e) => events.push(e));
    const done = pump.run();
    await settle();
    expect(events).toEqual([{ kind: 'chunk', value: 0 }, { kind: 'chunk', value: 1 }]);
    expect(log).toEqual(['produce 0', 'produce 1']);
    pump.grant(8);
    pump.grant(1);
    await done;
    expect(events).toHaveLength(11);
    expect(events[10]).toEqual({ kind: 'end' });
    expect(log.at(-1)).toBe('finally');
  });

  it('runs the iterator return() on cancel and then ends', async () => {
    const log: string[] = [];
    const events: StreamEvent[] = [];
    const pump = new StreamPump(async () => counting(10, log), 1, (e) => events.push(e));
    const done = pump.run();
    await settle();
    pump.cancel();
    await done;
    expect(log).toEqual(['produce 0', 'finally']);
    expect(events).toEqual([{ kind: 'chunk', value: 0 }, { kind: 'end' }]);
  });

  it('sends an error event when the iterator throws, or cannot be opened', async () => {
    const events: StreamEvent[] = [];
    const failing = (async function* () {
      yield 1;
      throw createError('SF_ERR_BAD_REQUEST', 'bad item');
    })();
    await new StreamPump(async () => failing, 5, (e) => events.push(e)).run();
    expect(events.map((e) => e.kind)).toEqual(['chunk', 'error']);
    expect(events[1]).toMatchObject({ kind: 'error', error: { code: 'SF_ERR_BAD_REQUEST', message: 'bad item', statusCode: 400 } });

    const opened: StreamEvent[] = [];
    await new StreamPump(() => Promise.reject(new Error('no iterable')), 5, (e) => opened.push(e)).run();
    expect(opened).toMatchObject([{ kind: 'error', error: { message: 'no iterable' } }]);
  });

  it('returns the iterator when an item cannot be turned into a chunk', async () => {
    const log: string[] = [];
    const events: StreamEvent[] = [];
    const toChunk = (item: unknown): unknown => {
      if (item === 1) throw new Error('not a chunk');
      return item;
    };
    await new StreamPump(async () => counting(10, log), 5, (e) => events.push(e), toChunk).run();
    expect(log).toEqual(['produce 0', 'produce 1', 'finally']);
    expect(events).toMatchObject([{ kind: 'chunk', value: 0 }, { kind: 'error', error: { message: 'not a chunk' } }]);
  });
});
