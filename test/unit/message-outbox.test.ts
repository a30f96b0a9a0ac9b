import { describe, expect, it } from 'vitest';
import { MessageOutbox } from '../../src/wire/message-outbox.js';
import { now } from '../../src/wire/epoch-time.js';

const later = (ms: number): void => {
  const until = now() + ms;
  while (now() < until);
};

describe('MessageOutbox', () => {
  it('keeps when its oldest waiting message was queued, whatever came after, until the flush', () => {
    const posted: unknown[] = [];
    const outbox = new MessageOutbox<string>(() => ({ postMessage: (message) => posted.push(message) }), () => undefined);
    const before = now();
    outbox.queue('outcome', []);
    const first = outbox.oldestQueuedMs;
    expect(first).toBeGreaterThanOrEqual(before);
    later(2);
    outbox.queue('result', []);
    expect(outbox.oldestQueuedMs).toBe(first);
    outbox.flush();
    later(2);
    const after = now();
    outbox.queue('result', []);
    expect(outbox.oldestQueuedMs).toBeGreaterThanOrEqual(after);
    expect(posted).toEqual([{ type: 'messages', messages: ['outcome', 'result'] }]);
  });
});
