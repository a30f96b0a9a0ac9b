import 'reflect-metadata';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { WIDE, WideEmbedder } from '../fixtures/text/wide-embedder-model.js';

/**
 * The HTTP thread while a maximal mean-pooled batch (32 texts × 512 tokens, 16,384 tokens, 1024
 * wide) runs: padding and pooling belong to the instance, as in TEI's backend, so health probes
 * and other routes keep being served. Pooled on the HTTP thread, such a batch held it 220+ ms.
 */
describe('a maximal mean-pooled batch', () => {
  let server: ServeFnServer;
  beforeAll(async () => {
    server = new ServeFnServer({ models: [WideEmbedder], moduleUrl: new URL('../fixtures/text/wide-embedder-model.ts', import.meta.url).href, collectProcessMetrics: false });
    await server.start();
  }, 60_000);
  afterAll(() => server.close());

  it('leaves the HTTP thread free: its event-loop delay stays bounded while the batch runs', async () => {
    const inputs = Array.from({ length: 32 }, (_, i) => `${'paris '.repeat(600)}${i}`);
    // Once first, so the instance's first-call costs are not what is measured.
    expect((await server.app.inject({ method: 'POST', url: '/embed', payload: { inputs: inputs.slice(0, 2) } })).statusCode).toBe(200);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const res = await server.app.inject({ method: 'POST', url: '/embed', payload: { inputs } });
    delay.disable();
    expect(res.statusCode).toBe(200);
    const vectors = res.json() as number[][];
    expect(vectors).toHaveLength(32);
    expect(vectors[0]).toHaveLength(WIDE);
    // Generous against a loaded machine's noise; the batch pooled on this thread took several times this.
    expect(delay.max / 1e6).toBeLessThan(150);
  }, 60_000);
});
