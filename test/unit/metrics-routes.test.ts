import Fastify, { type FastifyInstance } from 'fastify';
import { prometheusContentType } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { metricsRoutes } from '../../src/server/metrics-routes.js';

const apps: FastifyInstance[] = [];

async function appWith(recorder: InferenceRecorder): Promise<FastifyInstance> {
  const app = Fastify();
  apps.push(app);
  await app.register(metricsRoutes, { recorder });
  await app.ready();
  return app;
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

const batch = { computeInputUs: 1, computeInferUs: 2, computeOutputUs: 3 };

describe('metricsRoutes', () => {
  it('serves the registry as Prometheus text with its content type', async () => {
    const recorder = new InferenceRecorder({ collectProcessMetrics: false });
    recorder.batchExecuted('m', '1', 2, batch);
    recorder.batchExecuted('m', '1', 4, batch);
    const app = await appWith(recorder);

    const res = await app.inject({ method: 'GET', url: '/metrics' });

    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(prometheusContentType);
    expect(res.body).toBe(await recorder.registry.metrics());
    expect(res.body.split('\n')).toContain('nv_inference_count{model="m",version="1"} 6');
  });

  it('shows events recorded after an earlier scrape', async () => {
    const recorder = new InferenceRecorder({ collectProcessMetrics: false });
    const app = await appWith(recorder);
    recorder.requestFailed('m', '1', 'CANCELED');
    const first = await app.inject({ method: 'GET', url: '/metrics' });
    recorder.requestFailed('m', '1', 'CANCELED');
    const second = await app.inject({ method: 'GET', url: '/metrics' });

    const line = 'nv_inference_request_failure{model="m",version="1",reason="CANCELED"}';
    expect(first.body.split('\n')).toContain(`${line} 1`);
    expect(second.body.split('\n')).toContain(`${line} 2`);
  });

  it('serves each server its own recorder', async () => {
    const a = new InferenceRecorder({ collectProcessMetrics: false });
    const b = new InferenceRecorder({ collectProcessMetrics: false });
    a.batchExecuted('only-a', '1', 1, batch);
    b.batchExecuted('only-b', '1', 1, batch);

    const bodyA = (await (await appWith(a)).inject({ method: 'GET', url: '/metrics' })).body;
    const bodyB = (await (await appWith(b)).inject({ method: 'GET', url: '/metrics' })).body;

    expect(bodyA).toContain('model="only-a"');
    expect(bodyA).not.toContain('model="only-b"');
    expect(bodyB).toContain('model="only-b"');
    expect(bodyB).not.toContain('model="only-a"');
  });

  it('includes process metrics when the recorder collects them', async () => {
    const app = await appWith(new InferenceRecorder());
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.body).toMatch(/^process_cpu_user_seconds_total \d+(\.\d+)?$/m);
  });

  it('answers only GET', async () => {
    const app = await appWith(new InferenceRecorder({ collectProcessMetrics: false }));
    const res = await app.inject({ method: 'POST', url: '/metrics' });
    expect(res.statusCode).toBe(404);
  });
});
