import { describe, expect, it } from 'vitest';
import { StreamCredit } from '../../src/runtime/stream-credit.js';

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
