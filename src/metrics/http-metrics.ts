import type { FastifyInstance } from 'fastify';
import { Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS_SECONDS } from './inference-recorder.js';

/** The `route` of a request no route matched: one label value, however many paths clients try. */
export const UNMATCHED_ROUTE = 'none';

/**
 * `http_request_duration_seconds{method, route, status_code}` for every HTTP answer, as vLLM's
 * (prometheus-fastapi-instrumentator) and BentoML's servers export it. `route` is the route's
 * template (`/v2/models/:model_name/infer`), never the raw URL, so model names and ids in paths
 * do not multiply the series; a path no route matched is `none`, as the instrumentator groups it.
 */
export function installHttpMetrics(app: FastifyInstance, registry: Registry): void {
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Duration of HTTP requests in seconds, by method, route template and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: [...LATENCY_BUCKETS_SECONDS],
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    duration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
    done();
  });
}
