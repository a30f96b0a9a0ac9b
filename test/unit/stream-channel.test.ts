import { describe, expect, it } from 'vitest';
import { StreamCredit, type StreamEvent, StreamPump, StreamChannel } from '../../src/wire/stream-channel.js';
import { createError, serializeError } from '../../src/errors/index.js';
import { settle } from '../helpers/settle.js';

describe('StreamCredit', () => {
  it('hands out its initial units, then waits for a grant', async () => {
    const credit = new StreamCredit(2);
    expect(await credit.take()).toBe(true);
    expect(await credit.take()).toBe(true);
    let taken: boolean | undefined;
    const waiting = credit.take().then((v) => (taken = v));
    await Promise.resolve();
    expect(taken).toBeUndefined();
    credit.grant(1);
    await waiting;
    expect(taken).toBe(true);
    expect(credit.remaining).toBe(0);
  });

  it('answers false to a waiting and to a later take once closed', async () => {
    const credit = new StreamCredit(0);
    const waiting = credit.take();
    credit.close();
    expect(await waiting).toBe(false);
    credit.grant(3);
    expect(await credit.take()).toBe(false);
  });
});

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

function recordingChannel(): { channel: StreamChannel; calls: string[] } {
  const calls: string[] = [];
  const channel = new StreamChannel({ grant: (n) => calls.push(`grant ${n}`), cancel: () => calls.push('cancel') });
  return { channel, calls };
}

async function collect(channel: StreamChannel): Promise<unknown[]> {
  const items: unknown[] = [];
  for await (const item of channel) items.push(item);
  return items;
}

describe('StreamChannel', () => {
  it('yields chunks in order and grants one unit per chunk taken', async () => {
    const { channel, calls } = recordingChannel();
    channel.push({ kind: 'chunk', value: 'a' });
    channel.push({ kind: 'chunk', value: 'b' });
    await channel.started;
    const items = collect(channel);
    await settle();
    expect(calls).toEqual(['grant 1', 'grant 1']);
    channel.push({ kind: 'chunk', value: 'c' });
    // 'c' is taken after the end: a producer that has stopped gets no more credit.
    channel.push({ kind: 'end' });
    expect(await items).toEqual(['a', 'b', 'c']);
    expect(calls).toEqual(['grant 1', 'grant 1']);
    await channel.finished;
  });

  it('rejects started on an error before the first chunk', async () => {
    const { channel } = recordingChannel();
    channel.push({ kind: 'error', error: serializeError(createError('SF_ERR_BAD_REQUEST', 'no')) });
    await expect(channel.started).rejects.toMatchObject({ code: 'SF_ERR_BAD_REQUEST', message: 'no' });
    await channel.finished;
  });

  it('throws a later error after the chunks before it', async () => {
    const { channel } = recordingChannel();
    channel.push({ kind: 'chunk', value: 1 });
    channel.push({ kind: 'error', error: serializeError(new Error('midway')) });
    await channel.started;
    const items: unknown[] = [];
    await expect(
      (async () => {
        for await (const item of channel) items.push(item);
      })(),
    ).rejects.toThrow('midway');
    expect(items).toEqual([1]);
  });

  it('cancels the producer when the consumer stops early, and once only', async () => {
    const { channel, calls } = recordingChannel();
    channel.push({ kind: 'chunk', value: 1 });
    channel.push({ kind: 'chunk', value: 2 });
    for await (const item of channel) {
      expect(item).toBe(1);
      break;
    }
    channel.cancel();
    expect(calls).toEqual(['grant 1', 'cancel']);
    let finished = false;
    void channel.finished.then(() => (finished = true));
    await Promise.resolve();
    expect(finished).toBe(false);
    channel.push({ kind: 'chunk', value: 3 });
    channel.push({ kind: 'end' });
    await channel.finished;
    expect(await collect(channel)).toEqual([]);
  });

  it('ends a waiting consumer when the producer fails from outside', async () => {
    const { channel, calls } = recordingChannel();
    const items = collect(channel);
    channel.fail(new Error('instance died'));
    await expect(items).rejects.toThrow('instance died');
    channel.cancel();
    expect(calls).toEqual([]);
  });
});
