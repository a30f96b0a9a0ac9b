import { gzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cohereVllmRoutes } from '../../src/protocol/cohere-vllm/cohere-vllm-routes.js';
import { openAiRoutes } from '../../src/protocol/openai/openai-routes.js';
import { teiRoutes } from '../../src/protocol/tei/tei-routes.js';
import { DEFAULT_TEXT_PAYLOAD_LIMIT } from '../../src/protocol/text-routes.js';
import { DEFAULT_JSON_BODY_LIMIT, installJsonBodyParser } from '../../src/server/json-body-parser.js';
import { textModelFor, textModelSetOf, type ForwardLog } from '../helpers/text-model-fixture.js';

/** The text routes' own body limit (TEI's --payload-limit), which a gzip body cannot get past either. */
let app: FastifyInstance;
const log: ForwardLog = { batches: [] };

beforeAll(async () => {
  const models = textModelSetOf([await textModelFor('embed', { log }), await textModelFor('rerank', { log })]);
  // As serve-fn's server: a 64 MiB server limit, the 1 MiB JSON parser limit, and the text routes' own.
  app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  installJsonBodyParser(app, DEFAULT_JSON_BODY_LIMIT);
  await app.register(teiRoutes, { models, serverVersion: '1' });
  await app.register(openAiRoutes, { models });
  await app.register(cohereVllmRoutes, { models });
  await app.ready();
});

afterAll(() => app.close());

const bodies = (text: string): Record<string, object> => ({
  '/embed': { inputs: text, model: 'tiny-embed' },
  '/v1/embeddings': { input: text, model: 'tiny-embed' },
  '/v1/rerank': { query: text, documents: ['a'], model: 'tiny-rerank' },
});

const send = (url: string, payload: string | Buffer, gzip: boolean): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...(gzip ? { 'content-encoding': 'gzip' } : {}) }, payload });

/** The 413 in each route's own error shape, naming the text routes' limit. */
function expectTooLarge(url: string, res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(413);
  const message = `Request body is larger than the limit of ${DEFAULT_TEXT_PAYLOAD_LIMIT} bytes.`;
  if (url === '/embed') expect(res.json()).toEqual({ error: message, error_type: 'Validation' });
  else expect(res.json().error).toMatchObject({ message });
}

describe('the text routes’ payload limit', () => {
  it.each(Object.keys(bodies('')))('%s: a 3 MiB JSON body sent gzipped is 413, as sent plain, before any tokenizing', async (url) => {
    const json = JSON.stringify(bodies('a '.repeat(1.5 * 1024 * 1024))[url]);
    const zipped = gzipSync(json);
    expect(zipped.byteLength).toBeLessThan(16 * 1024);
    expectTooLarge(url, await send(url, zipped, true));
    expectTooLarge(url, await send(url, json, false));
    expect(log.batches).toEqual([]);
  });

  it.each(Object.keys(bodies('')))('%s: takes a body between the 1 MiB JSON limit and TEI’s 2,000,000 bytes', async (url) => {
    // An unknown field pads the body, as serde and pydantic ignore it.
    const json = JSON.stringify({ ...bodies('hello')[url], padding: 'x'.repeat(1_500_000) });
    expect((await send(url, json, false)).statusCode).toBe(200);
    expect((await send(url, gzipSync(json), true)).statusCode).toBe(200);
  });
});
