import { describe, expect, it } from 'vitest';
import { SocketInbox } from '../../src/runtime/socket-inbox.js';

describe('SocketInbox', () => {
  it('yields messages in order, reports each one taken, and ends after the rest once ended', async () => {
    let taken = 0;
    const inbox = new SocketInbox<string>(() => taken++);
    inbox.push('a');
    inbox.push('b');
    inbox.end();
    inbox.push('ignored after end');
    const seen: string[] = [];
    for await (const m of inbox) seen.push(m);
    expect(seen).toEqual(['a', 'b']);
    expect(taken).toBe(2);
  });

  it('wakes a reader that waits for the next message', async () => {
    const inbox = new SocketInbox<number>(() => undefined);
    const iterator = inbox[Symbol.asyncIterator]();
    const next = iterator.next();
    inbox.push(7);
    expect(await next).toEqual({ value: 7, done: false });
    const last = iterator.next();
    inbox.end();
    expect(await last).toEqual({ value: undefined, done: true });
  });

  it('counts what is queued and not taken', async () => {
    const inbox = new SocketInbox<number>(() => undefined);
    inbox.push(1);
    inbox.push(2);
    expect(inbox.size).toBe(2);
    await inbox[Symbol.asyncIterator]().next();
    expect(inbox.size).toBe(1);
  });

  it('refuses a second reader', async () => {
    const inbox = new SocketInbox<number>(() => undefined);
    inbox.push(1);
    await inbox[Symbol.asyncIterator]().next();
    await expect(inbox[Symbol.asyncIterator]().next()).rejects.toThrow('the messages of a WebSocket connection can be iterated only once');
  });
});
