import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { teiRoutes } from '../../src/protocol/tei/tei-routes.js';
import { DEFAULT_JSON_BODY_LIMIT, installJsonBodyParser } from '../../src/server/json-body-parser.js';
import { registerOpenApi } from '../../src/server/openapi-plugin.js';
import type { TextEngine } from '../../src/text/text-engine.js';
import { textModelFor, textModelSetOf } from './text-model-fixture.js';

/** A bare app with the server's JSON parser (so unreadable JSON arrives as it does in serve-fn) and the TEI routes. */
export async function teiApp(models: TextEngine[], withDocs = false): Promise<FastifyInstance> {
  const app = Fastify();
  installJsonBodyParser(app, DEFAULT_JSON_BODY_LIMIT);
  if (withDocs) await registerOpenApi(app, {}, { title: 'tei', version: '1' });
  await app.register(teiRoutes, { models: textModelSetOf(models), serverVersion: '1.2.3' });
  await app.ready();
  return app;
}

/** One model of each task (the embedder mean-pooled, so every token of an input shows in its vector), each behind its own TEI app. */
export async function teiAppsByTask() {
  const [embedder, classifier, reranker, splade] = await Promise.all([textModelFor('embed', { pooling: 'mean' }), textModelFor('classify'), textModelFor('rerank'), textModelFor('sparse')]);
  const [embedApp, classifyApp, rerankApp, sparseApp] = await Promise.all([teiApp([embedder]), teiApp([classifier]), teiApp([reranker]), teiApp([splade])]);
  return { embedder, classifier, reranker, splade, embedApp, classifyApp, rerankApp, sparseApp };
}

export type TeiAppsByTask = Awaited<ReturnType<typeof teiAppsByTask>>;

export const post = (app: FastifyInstance, url: string, payload: unknown): Promise<LightMyRequestResponse> => app.inject({ method: 'POST', url, payload: payload as object });

/** A TEI error body, `{error, error_type}` and nothing else, with this status. */
export function expectTeiError(res: LightMyRequestResponse, status: number, errorType: string, message?: RegExp): void {
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json() as { error: unknown; error_type: unknown };
  expect(Object.keys(body).sort()).toEqual(['error', 'error_type']);
  expect(body.error_type).toBe(errorType);
  expect(typeof body.error).toBe('string');
  if (message) expect(body.error).toMatch(message);
}

export const norm = (v: readonly number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
export const cosine = (a: readonly number[], b: readonly number[]): number => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));
