import type { FastifyInstance } from 'fastify';

export interface RequestCounts {
  readonly success: number;
  readonly failure: number;
}

/** Success and failure counts per `model:version`, as `GET /v2/models/stats` gives them. */
export async function statisticsCounts(app: FastifyInstance): Promise<Record<string, RequestCounts>> {
  const res = await app.inject({ method: 'GET', url: '/v2/models/stats' });
  const stats = res.json().model_stats as { name: string; version: string; inference_stats: { success: { count: number }; fail: { count: number } } }[];
  return Object.fromEntries(stats.map((s) => [`${s.name}:${s.version}`, { success: s.inference_stats.success.count, failure: s.inference_stats.fail.count }]));
}

/** `nv_inference_request_success` and `nv_inference_request_failure` (every reason summed) per `model:version`, from `GET /metrics`. */
export async function metricsCounts(app: FastifyInstance): Promise<Record<string, RequestCounts>> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const counts: Record<string, { success: number; failure: number }> = {};
  for (const match of text.matchAll(/^nv_inference_request_(success|failure)\{model="([^"]*)",version="([^"]*)"[^}]*\} (\S+)$/gm)) {
    const [, kind, model, version, value] = match;
    const entry = (counts[`${model}:${version}`] ??= { success: 0, failure: 0 });
    entry[kind as 'success' | 'failure'] += Number(value);
  }
  return counts;
}
