import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { disconnectSignal } from '../../src/server/disconnect-signal.js';

class FakeResponse extends EventEmitter {
  writableEnded = false;
  closed = false;
}

function fakeReply(): { reply: Pick<FastifyReply, 'raw'>; raw: FakeResponse } {
  const raw = new FakeResponse();
  return { reply: { raw } as unknown as Pick<FastifyReply, 'raw'>, raw };
}

describe('disconnectSignal', () => {
  it('aborts when the response closes before it has ended', () => {
    const { reply, raw } = fakeReply();
    const { signal } = disconnectSignal(reply);
    expect(signal.aborted).toBe(false);
    raw.emit('close');
    expect(signal.aborted).toBe(true);
  });

  it('does not abort when the response closes after it has ended', () => {
    const { reply, raw } = fakeReply();
    const { signal } = disconnectSignal(reply);
    raw.writableEnded = true;
    raw.emit('close');
    expect(signal.aborted).toBe(false);
  });

  it('stops watching the response after release', () => {
    const { reply, raw } = fakeReply();
    const { signal, release } = disconnectSignal(reply);
    expect(raw.listenerCount('close')).toBe(1);
    release();
    expect(raw.listenerCount('close')).toBe(0);
    raw.emit('close');
    expect(signal.aborted).toBe(false);
  });

  it('as a CancelSignal, watches the response only while a listener is attached', () => {
    const { reply, raw } = fakeReply();
    const watch = disconnectSignal(reply);
    expect(raw.listenerCount('close')).toBe(0);
    let calls = 0;
    const listener = (): void => {
      calls++;
    };
    watch.addEventListener('abort', listener);
    expect(raw.listenerCount('close')).toBe(1);
    watch.removeEventListener('abort', listener);
    expect(raw.listenerCount('close')).toBe(0);
    raw.emit('close');
    expect(calls).toBe(0);
  });

  it('as a CancelSignal, calls its listener when the response closes before it has ended, not after', () => {
    const early = fakeReply();
    const gone = disconnectSignal(early.reply);
    let calls = 0;
    gone.addEventListener('abort', () => calls++);
    early.raw.emit('close');
    expect(calls).toBe(1);
    expect(gone.aborted).toBe(true);

    const late = fakeReply();
    const answered = disconnectSignal(late.reply);
    answered.addEventListener('abort', () => calls++);
    late.raw.writableEnded = true;
    late.raw.emit('close');
    expect(calls).toBe(1);
    expect(answered.aborted).toBe(false);
  });

  it('is aborted without a listener once the connection closed before the answer, and stays so after release', () => {
    const { reply, raw } = fakeReply();
    const watch = disconnectSignal(reply);
    expect(watch.aborted).toBe(false);
    raw.closed = true;
    expect(watch.aborted).toBe(true);
    expect(watch.signal.aborted).toBe(true);
    watch.release();
    raw.writableEnded = true;
    expect(watch.aborted).toBe(true);
  });

  it('after release, a close is not an abort', () => {
    const { reply, raw } = fakeReply();
    const watch = disconnectSignal(reply);
    watch.release();
    raw.closed = true;
    expect(watch.aborted).toBe(false);
  });
});
