import { describe, expect, it } from 'vitest';
import { SocketInbox, SocketLink, type SocketControl } from '../../src/wire/socket-session.js';
import type { SocketInput } from '../../src/wire/wire-format.js';

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

function control(): SocketControl & { log: string[]; delivered: SocketInput[] } {
  const log: string[] = [];
  const delivered: SocketInput[] = [];
  return {
    log,
    delivered,
    deliver: (input) => delivered.push(input),
    endInput: () => log.push('end-input'),
    grant: (units) => log.push(`grant ${units}`),
    cancel: () => log.push('cancel'),
  };
}

describe('SocketLink', () => {
  it('counts messages and bytes sent and not yet taken, oldest taken first, and calls the listener on each report', () => {
    const c = control();
    const link = new SocketLink(c, 1);
    let reports = 0;
    link.whenTaken(() => reports++);
    link.send({ kind: 'text', value: 'a' }, 10);
    link.send({ kind: 'binary', value: new Uint8Array([1]) }, 3);
    expect([link.pendingInput, link.pendingBytes]).toEqual([2, 13]);
    link.taken(1);
    expect([link.pendingInput, link.pendingBytes]).toEqual([1, 3]);
    expect(reports).toBe(1);
    link.taken(5);
    expect([link.pendingInput, link.pendingBytes]).toEqual([0, 0]);
    expect(c.delivered).toEqual([{ kind: 'text', value: 'a' }, { kind: 'binary', value: new Uint8Array([1]) }]);
    expect(link.instanceIndex).toBe(1);
  });

  it('close ends the input and cancels the output', () => {
    const c = control();
    const link = new SocketLink(c, 0);
    link.output.push({ kind: 'chunk', value: 1 });
    link.close();
    expect(c.log).toEqual(['end-input', 'cancel']);
  });

  it('grants the producer one unit per output item taken while it is still producing', async () => {
    const c = control();
    const link = new SocketLink(c, 0);
    link.output.push({ kind: 'chunk', value: 'x' });
    const iterator = link.output[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ value: 'x', done: false });
    expect(c.log).toEqual(['grant 1']);
    link.output.push({ kind: 'end' });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    expect(c.log).toEqual(['grant 1']);
  });
});
