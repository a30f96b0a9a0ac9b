import { gzipSync } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installErrorHandling } from '../../src/server/error-handler.js';
import { installJsonBodyParser } from '../../src/server/json-body-parser.js';

const PARSER_LIMIT = 64 * 1024;
const ROUTE_LIMIT = 256 * 1024;
let app: FastifyInstance;

beforeAll(async () => {
  // The server's own limit is far above both, as serve-fn's 64 MiB is above its JSON limits.
  app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  installErrorHandling(app, { bodyLimit: PARSER_LIMIT, exposeErrors: false });
  installJsonBodyParser(app, PARSER_LIMIT);
  app.post('/default', async (request) => ({ bytes: JSON.stringify(request.body).length }));
  app.post('/own', { bodyLimit: ROUTE_LIMIT }, async (request) => ({ bytes: JSON.stringify(request.body).length }));
  await app.ready();
});

afterAll(() => app.close());

/** A JSON body of about `bytes` bytes that gzip squeezes to a few KiB. */
const jsonOf = (bytes: number): string => JSON.stringify({ text: 'a'.repeat(bytes) });
const gzipped = (url: string, body: string) =>
  app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, payload: gzipSync(body) });

describe('compressed JSON bodies', () => {
  it("inflate only up to the parser's limit on a route without its own, as the plain body is read", async () => {
    const over = await gzipped('/default', jsonOf(2 * PARSER_LIMIT));
    expect([over.statusCode, over.json().code, over.json().error]).toEqual([413, 'SF_ERR_BODY_TOO_LARGE', `Request body is larger than the limit of ${PARSER_LIMIT} bytes.`]);
    expect((await gzipped('/default', jsonOf(PARSER_LIMIT / 2))).statusCode).toBe(200);
  });

  it("inflate up to a route's own limit, above or below the parser's", async () => {
    expect((await gzipped('/own', jsonOf(2 * PARSER_LIMIT))).statusCode).toBe(200);
    const over = await gzipped('/own', jsonOf(2 * ROUTE_LIMIT));
    expect([over.statusCode, over.json().error]).toEqual([413, `Request body is larger than the limit of ${ROUTE_LIMIT} bytes.`]);
  });
});
