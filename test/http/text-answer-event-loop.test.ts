import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingsResponse } from '../../src/protocol/openai/openai-embeddings.js';
import type { TextAnswer, TextEngine } from '../../src/text/text-engine.js';
import { textProtocolApps, type TextProtocolApps } from '../helpers/text-protocol-apps.js';

// 64 × 4096 floats: ~5 MB of JSON, 100–200 ms of JSON.stringify in one go on a loaded machine.
const ROWS = 64;
const WIDTH = 4096;

function wideAnswer(): TextAnswer<Float32Array> {
  let x = 7;
  const next = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  return {
    values: Array.from({ length: ROWS }, () => Float32Array.from({ length: WIDTH }, next)),
    promptTokens: ROWS,
    characters: ROWS,
    timings: { tokenizationMs: 0, queueMs: 0, inferenceMs: 0, totalMs: 0 },
  };
}

/** How many turns the event loop took while `send` ran (a count, not a time: the machine's load does not move it). */
async function turnsDuring(send: () => Promise<void>): Promise<number> {
  let turns = 0;
  let running = true;
  const turn = (): void => {
    if (!running) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  await send();
  running = false;
  return turns;
}

describe('large text answers leave the HTTP thread free while they are written', () => {
  let apps: TextProtocolApps;
  const answer = wideAnswer();
  beforeAll(async () => {
    apps = await textProtocolApps();
    // The engine's work is not what this measures: the embedder answers a wide batch at once.
    const embedder = apps.models.embed as TextEngine & { embed: TextEngine['embed'] };
    embedder.embed = async () => answer;
  });
  afterAll(() => apps.close());

  const routes: [string, () => FastifyInstance, string, object, () => string | undefined][] = [
    ['TEI /embed', () => apps.tei, '/embed', { inputs: ['a'] }, () => JSON.stringify(answer.values.map((row) => Array.from(row)))],
    ['OpenAI /v1/embeddings', () => apps.family, '/v1/embeddings', { input: ['a'], model: 'tiny-embed' }, () => JSON.stringify(embeddingsResponse(answer, 'tiny-embed', 'float'))],
    ['OpenAI /v1/embeddings, base64', () => apps.family, '/v1/embeddings', { input: ['a'], model: 'tiny-embed', encoding_format: 'base64' }, () => JSON.stringify(embeddingsResponse(answer, 'tiny-embed', 'base64'))],
    // Its answer carries a random id: compared with its own JSON.stringify below.
    ['Cohere /v2/embed', () => apps.family, '/v2/embed', { texts: ['a'], model: 'tiny-embed', input_type: 'search_query', embedding_types: ['float'] }, () => undefined],
  ];
  for (const [name, app, url, payload, expected] of routes) {
    it(`${name}: the event loop keeps turning while the answer is written, and the body is JSON.stringify's, with its Content-Length`, async () => {
      let body = '';
      let headers: Record<string, unknown> = {};
      const turns = await turnsDuring(async () => {
        const res = await app().inject({ method: 'POST', url, payload });
        expect(res.statusCode, res.body.slice(0, 200)).toBe(200);
        body = res.body;
        headers = res.headers;
      });
      expect(body).toBe(expected() ?? JSON.stringify(JSON.parse(body)));
      expect(headers['content-length']).toBe(String(Buffer.byteLength(body)));
      expect(headers['content-type']).toBe('application/json; charset=utf-8');
      // Written in one go, the answer (and app.inject's whole request) takes no turn at all; in 64 KB slices, dozens.
      expect(turns).toBeGreaterThanOrEqual(10);
    });
  }
});
