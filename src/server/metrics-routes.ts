import type { FastifyInstance } from 'fastify';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';

export interface MetricsRoutesOptions {
  recorder: InferenceRecorder;
}

/** `GET /metrics`: the recorder's registry in Prometheus text format. */
export async function metricsRoutes(app: FastifyInstance, opts: MetricsRoutesOptions): Promise<void> {
  const { registry } = opts.recorder;
  const schema = { summary: 'Prometheus metrics', produces: [registry.contentType], response: { 200: { description: 'Prometheus text exposition format', type: 'string' } } };
  app.get('/metrics', { schema }, async (_request, reply) => {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
}
