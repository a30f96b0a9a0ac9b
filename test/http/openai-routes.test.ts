import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createError } from '../../src/errors/index.js';
import { openAiRoutes } from '../../src/protocol/openai/openai-routes.js';
import type { TextEngine } from '../../src/text/text-engine.js';
import { textModelFor, textModelSetOf } from '../helpers/text-model-fixture.js';

let embedder: TextEngine;
let small: TextEngine;
let reranker: TextEngine;
let app: FastifyInstance;

beforeAll(async () => {
  embedder = await textModelFor('embed', { name: 'embedder', pooling: 'mean' });
  small = await textModelFor('embed', { name: 'small-batches', pooling: 'mean', limits: { maxClientBatchSize: 2 } });
  reranker = await textModelFor('rerank', { name: 'reranker' });
  app = Fastify({ logger: false });
  await app.register(openAiRoutes, { models: textModelSetOf([embedder, small, reranker]) });
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

afterEach(() => {
  vi.restoreAllMocks();
});

function post(body: unknown, url = '/v1/embeddings') {
  return app.inject({ method: 'POST', url, payload: body as object });
}

/** The vector a base64 embedding holds: little-endian float32, read here independently of the route's encoder. */
function decodeBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(i * 4, true));
}

function l2(values: readonly number[]): number[] {
  const norm = Math.sqrt(values.reduce((sum, x) => sum + x * x, 0));
  return values.map((x) => x / norm);
}

describe('POST /v1/embeddings', () => {
  it('embeds one string as floats by default, with the engine vector, the model name and the token count with special tokens', async () => {
    const response = await post({ input: 'hello world', model: 'embedder' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    const expected = await embedder.embed(['hello world']);
    const tokens = (await embedder.tokenizer.encode('hello world')).ids.length;
    expect(body).toEqual({
      object: 'list',
      data: [{ object: 'embedding', embedding: Array.from(expected.values[0]), index: 0 }],
      model: 'embedder',
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
    expect(tokens).toBeGreaterThan((await embedder.tokenizer.encode('hello world', { addSpecialTokens: false })).ids.length);
    expect(response.headers['x-compute-tokens']).toBe(String(tokens));
  });

  it('embeds a list of strings in order, indexed from 0', async () => {
    const texts = ['first text', 'a second, longer text', 'third'];
    const body = (await post({ input: texts, model: 'embedder' })).json();
    const expected = await embedder.embed(texts);
    expect(body.data.map((d: { index: number }) => d.index)).toEqual([0, 1, 2]);
    expect(body.data.map((d: { embedding: number[] }) => d.embedding)).toEqual(expected.values.map((v) => Array.from(v)));
    // Mean pooling, so each text has its own vector and a mix-up of the order shows.
    expect(body.data[0].embedding).not.toEqual(body.data[1].embedding);
    expect(body.usage.prompt_tokens).toBe(expected.promptTokens);
  });

  it('takes token ids and lists of token ids as given', async () => {
    const ids = Array.from((await embedder.tokenizer.encode('token ids here')).ids);
    const one = (await post({ input: ids, model: 'embedder' })).json();
    expect(one.data).toHaveLength(1);
    expect(one.data[0].embedding).toEqual(Array.from((await embedder.embed([ids])).values[0]));
    expect(one.usage.prompt_tokens).toBe(ids.length);
    const two = (await post({ input: [ids, ids.slice(0, 2)], model: 'embedder' })).json();
    expect(two.data).toHaveLength(2);
    expect(two.usage.prompt_tokens).toBe(ids.length + 2);
  });

  it('answers base64 as the little-endian float32 bytes of the float answer', async () => {
    const floats = (await post({ input: ['abc', 'def'], model: 'embedder', encoding_format: 'float' })).json();
    const encoded = (await post({ input: ['abc', 'def'], model: 'embedder', encoding_format: 'base64' })).json();
    expect(typeof encoded.data[0].embedding).toBe('string');
    expect(encoded.data.map((d: { embedding: string }) => decodeBase64(d.embedding))).toEqual(floats.data.map((d: { embedding: number[] }) => d.embedding));
  });

  it('keeps the first `dimensions` values and re-normalises them', async () => {
    const raw = Array.from((await embedder.embed(['matryoshka'], { normalize: false })).values[0]);
    const body = (await post({ input: 'matryoshka', model: 'embedder', dimensions: 3 })).json();
    const expected = l2(raw.slice(0, 3));
    expect(body.data[0].embedding).toHaveLength(3);
    body.data[0].embedding.forEach((x: number, i: number) => expect(x).toBeCloseTo(expected[i], 5));
  });

  it('treats an absent model as the only embedder there is', async () => {
    const solo = Fastify({ logger: false });
    await solo.register(openAiRoutes, { models: textModelSetOf([embedder]) });
    const response = await solo.inject({ method: 'POST', url: '/v1/embeddings', payload: { input: 'no model named' } });
    await solo.close();
    expect(response.statusCode).toBe(200);
    expect(response.json().model).toBe('embedder');
  });

  it('ignores `user`, and /embeddings answers as /v1/embeddings', async () => {
    const a = (await post({ input: 'same', model: 'embedder', user: 'user-1' })).json();
    const b = (await post({ input: 'same', model: 'embedder' }, '/embeddings')).json();
    expect(a).toEqual(b);
  });
});

describe('POST /v1/embeddings errors', () => {
  async function refused(body: unknown, status = 400) {
    const response = await post(body);
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    return response.json().error as { message: string; type: string; param: string | null; code: string };
  }

  it.each([
    ['a null encoding_format (TEI and vLLM refuse it)', { input: 'x', model: 'embedder', encoding_format: null }, 'encoding_format'],
    ['an unknown encoding_format', { input: 'x', model: 'embedder', encoding_format: 'bytes' }, 'encoding_format'],
    ['dimensions 0', { input: 'x', model: 'embedder', dimensions: 0 }, 'dimensions'],
    ['fractional dimensions', { input: 'x', model: 'embedder', dimensions: 2.5 }, 'dimensions'],
    ['dimensions as a string', { input: 'x', model: 'embedder', dimensions: '3' }, 'dimensions'],
    ['a missing input', { model: 'embedder' }, 'input'],
    ['an empty string', { input: '', model: 'embedder' }, 'input'],
    ['an empty list', { input: [], model: 'embedder' }, 'input'],
    ['a fractional token id', { input: [1.5], model: 'embedder' }, 'input'],
    ['an object in the input list', { input: ['ok', { text: 'no' }], model: 'embedder' }, 'input'],
    ['a model that is not a string', { input: 'x', model: 7 }, 'model'],
    ['a user that is not a string', { input: 'x', model: 'embedder', user: 7 }, 'user'],
  ])('refuses %s with a 400 invalid_request_error naming the field', async (_what, body, param) => {
    const error = await refused(body);
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe(param);
    expect(error.message.length).toBeGreaterThan(0);
  });

  it('refuses dimensions above the embedding width with the engine message', async () => {
    const width = (await post({ input: 'x', model: 'embedder' })).json().data[0].embedding.length;
    const error = await refused({ input: 'x', model: 'embedder', dimensions: width + 1 });
    expect(error.code).toBe('SF_ERR_TEXT_VALIDATION');
    expect(error.message).toContain(`got ${width + 1}`);
  });

  it('answers a model name it does not serve from the only model of a one-model server, as TEI does', async () => {
    const lone = Fastify();
    await lone.register(openAiRoutes, { models: textModelSetOf([embedder]) });
    const res = await lone.inject({ method: 'POST', url: '/v1/embeddings', payload: { input: 'x', model: 'text-embedding-3-small', encoding_format: 'float' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data[0].embedding).toEqual(Array.from((await embedder.embed(['x'])).values[0]));
    await lone.close();
  });

  it('answers an unknown model with 404', async () => {
    const error = await refused({ input: 'x', model: 'nope' }, 404);
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'SF_ERR_TEXT_MODEL_UNKNOWN' });
    expect(error.message).toContain("'nope'");
  });

  it('answers a model of another task with 400', async () => {
    const error = await refused({ input: 'x', model: 'reranker' });
    expect(error.code).toBe('SF_ERR_TEXT_WRONG_TASK');
  });

  it('answers an ambiguous request (two embedders, no model) with 400', async () => {
    expect((await refused({ input: 'x' })).code).toBe('SF_ERR_TEXT_MODEL_AMBIGUOUS');
  });

  it('answers more inputs than the client batch limit with 400 and TEI wording', async () => {
    const error = await refused({ input: ['a', 'b', 'c'], model: 'small-batches' });
    expect(error.message).toBe('batch size 3 > maximum allowed batch size 2');
  });

  it('answers invalid JSON and a non-object body in the same shape', async () => {
    const broken = await app.inject({ method: 'POST', url: '/v1/embeddings', headers: { 'content-type': 'application/json' }, payload: '{"input": ' });
    expect(broken.statusCode).toBe(400);
    expect(broken.json().error.type).toBe('invalid_request_error');
    expect((await refused(['input'])).param).toBe('body');
  });

  it('answers overload with 429 and a server fault with a generic 500, and keeps serving', async () => {
    vi.spyOn(embedder, 'embed').mockRejectedValueOnce(createError('SF_ERR_TEXT_OVERLOADED'));
    expect(await refused({ input: 'x', model: 'embedder' }, 429)).toMatchObject({ type: 'requests', message: 'Model is overloaded' });
    vi.spyOn(embedder, 'embed').mockRejectedValueOnce(new Error('secret internals'));
    const fault = await refused({ input: 'x', model: 'embedder' }, 500);
    expect(fault.type).toBe('server_error');
    expect(fault.message).not.toContain('secret');
    expect((await post({ input: 'x', model: 'embedder' })).statusCode).toBe(200);
  });
});

describe('GET /v1/models', () => {
  it('lists every served text model as an OpenAI Model', async () => {
    const body = (await app.inject({ method: 'GET', url: '/v1/models' })).json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(['embedder', 'small-batches', 'reranker']);
    for (const model of body.data) {
      expect(model).toEqual({ id: model.id, object: 'model', created: expect.any(Number), owned_by: 'serve-fn' });
      expect(model.created).toBeLessThanOrEqual(Date.now() / 1000);
    }
  });

  it('retrieves one model, and answers an unknown one with 404 in OpenAI shape', async () => {
    expect((await app.inject({ method: 'GET', url: '/v1/models/reranker' })).json()).toMatchObject({ id: 'reranker', object: 'model' });
    const missing = await app.inject({ method: 'GET', url: '/v1/models/nope' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('SF_ERR_TEXT_MODEL_UNKNOWN');
  });
});

describe('OpenAPI', () => {
  it('documents the routes under their tag, with OpenAI error bodies', async () => {
    const swagger = (await import('@fastify/swagger')).default;
    const documented = Fastify({ logger: false });
    await documented.register(swagger, { openapi: { openapi: '3.0.3', info: { title: 't', version: '1' } } });
    await documented.register(openAiRoutes, { models: textModelSetOf([embedder]) });
    await documented.ready();
    const spec = documented.swagger() as unknown as { paths: Record<string, Record<string, { tags: string[]; responses: Record<string, unknown> }>> };
    await documented.close();
    expect(Object.keys(spec.paths).sort()).toEqual(['/embeddings', '/v1/embeddings', '/v1/models', '/v1/models/{model}']);
    expect(spec.paths['/v1/embeddings'].post.tags).toEqual(['OpenAI-compatible embeddings']);
    expect(Object.keys(spec.paths['/v1/embeddings'].post.responses)).toEqual(['200', '400', '404', '429', '500']);
  });
});
