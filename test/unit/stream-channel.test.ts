import { describe, expect, it } from 'vitest';
import { createError, serializeError } from '../../src/errors/index.js';
import { StreamChannel } from '../../src/runtime/stream-channel.js';
import { settle } from '../helpers/settle.js';

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
