import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import { disconnectSignal } from '../../src/server/disconnect-signal.js';

class FakeResponse extends EventEmitter {
  writableEnded = false;
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
});
