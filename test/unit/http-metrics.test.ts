import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { installHttpMetrics } from '../../src/metrics/http-metrics.js';

async function countOf(registry: Registry, labels: Record<string, string>): Promise<number | undefined> {
  const metric = await registry.getSingleMetric('http_request_duration_seconds')?.get();
  const values = (metric?.values ?? []) as { metricName?: string; labels: Record<string, string | number>; value: number }[];
  const sample = values.find(
    (v) => v.metricName === 'http_request_duration_seconds_count' && Object.entries(labels).every(([k, value]) => v.labels[k] === value),
  );
  return sample?.value;
}

describe('installHttpMetrics', () => {
  it('observes each answer by method, route template and status code', async () => {
    const registry = new Registry();
    const app = Fastify();
    installHttpMetrics(app, registry);
    app.post('/v2/models/:model/infer', async (request, reply) => reply.code((request.body as { bad?: boolean }).bad ? 400 : 200).send({}));
    await app.ready();

    await app.inject({ method: 'POST', url: '/v2/models/a/infer', payload: {} });
    await app.inject({ method: 'POST', url: '/v2/models/b/infer', payload: {} });
    await app.inject({ method: 'POST', url: '/v2/models/a/infer', payload: { bad: true } });
    await app.inject({ method: 'GET', url: '/no/such/path/1' });
    await app.inject({ method: 'GET', url: '/no/such/path/2' });

    expect(await countOf(registry, { method: 'POST', route: '/v2/models/:model/infer', status_code: '200' })).toBe(2);
    expect(await countOf(registry, { method: 'POST', route: '/v2/models/:model/infer', status_code: '400' })).toBe(1);
    expect(await countOf(registry, { method: 'GET', route: 'none', status_code: '404' })).toBe(2);
    const text = await registry.metrics();
    expect(text).not.toContain('/no/such/path');
    expect(text).toContain('http_request_duration_seconds_bucket{le="0.001",method="POST",route="/v2/models/:model/infer",status_code="200"}');
    await app.close();
  });
});
