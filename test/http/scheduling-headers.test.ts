import { IsInt, Min } from 'class-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model } from '../../src/index.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';

class Work {
  @IsInt() @Min(0) ms!: number;
}

@Model({ name: 'sched' })
@Instances(1, { inline: true })
class Scheduled {
  @Endpoint('/work', { body: Work })
  @Batch({
    maxBatchSize: 1,
    priorityLevels: 2,
    defaultQueuePolicy: { allowTimeoutOverride: true, timeoutAction: 'REJECT' },
  })
  async work(batch: Work[]): Promise<{ done: number }[]> {
    await new Promise((r) => setTimeout(r, batch[0].ms));
    return [{ done: batch[0].ms }];
  }
}

describe('serve-fn-priority and serve-fn-timeout-us headers', () => {
  let server: ServeFnServer;
  beforeAll(async () => {
    server = new ServeFnServer({ models: [Scheduled], collectProcessMetrics: false });
    await server.start();
  });
  afterAll(() => server.close());

  it('refuses a priority outside the endpoint levels with a 400 that says why', async () => {
    const res = await server.app.inject({ method: 'POST', url: '/work', headers: { 'serve-fn-priority': '3' }, payload: { ms: 0 } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 'SF_ERR_PRIORITY_INVALID',
      error: 'Priority 3 is out of range: this model has priority levels 1..2 (0 = default).',
    });
  });

  it('rejects a queued request whose own timeout expires, with Triton wording', async () => {
    const busy = server.app.inject({ method: 'POST', url: '/work', payload: { ms: 300 } });
    await new Promise((r) => setTimeout(r, 20));
    const late = await server.app.inject({ method: 'POST', url: '/work', headers: { 'serve-fn-timeout-us': '50000' }, payload: { ms: 0 } });
    expect(late.statusCode).toBe(503);
    expect(late.json()).toEqual({ code: 'SF_ERR_TIMEOUT', error: 'Request timeout expired' });
    expect((await busy).statusCode).toBe(200);
  });

  it('runs a high-priority request before earlier default-priority ones', async () => {
    const order: number[] = [];
    const blocker = server.app.inject({ method: 'POST', url: '/work', payload: { ms: 150 } });
    await new Promise((r) => setTimeout(r, 20));
    const low = server.app.inject({ method: 'POST', url: '/work', payload: { ms: 1 } }).then((r) => order.push(r.json().done));
    const high = server.app
      .inject({ method: 'POST', url: '/work', headers: { 'serve-fn-priority': '1' }, payload: { ms: 2 } })
      .then((r) => order.push(r.json().done));
    await Promise.all([blocker, low, high]);
    expect(order).toEqual([2, 1]);
  });

  it('refuses a timeout that is not a number', async () => {
    const res = await server.app.inject({ method: 'POST', url: '/work', headers: { 'serve-fn-timeout-us': 'soon' }, payload: { ms: 0 } });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('SF_ERR_TIMEOUT_INVALID');
  });
});
