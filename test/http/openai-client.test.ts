import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI, { APIError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiRoutes } from '../../src/protocol/openai/openai-routes.js';
import type { TextEngine } from '../../src/text/text-engine.js';
import { textModelFor, textModelSetOf } from '../helpers/text-model-fixture.js';

/** The official openai-node SDK, unchanged, pointed at serve-fn: what it sends by default and how it reads answers and errors. */
let embedder: TextEngine;
let app: FastifyInstance;
let client: OpenAI;
/** The bodies the SDK sent, as the server parsed them. */
const sent: Record<string, unknown>[] = [];

beforeAll(async () => {
  embedder = await textModelFor('embed', { name: 'embedder', pooling: 'mean' });
  app = Fastify({ logger: false });
  app.addHook('preHandler', async (request) => {
    sent.push(request.body as Record<string, unknown>);
  });
  // Two models, so a model name that is not served is refused rather than answered by the only one.
  await app.register(openAiRoutes, { models: textModelSetOf([embedder, await textModelFor('rerank', { name: 'reranker' })]) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  // No retries, so a refused request is seen once.
  client = new OpenAI({ apiKey: 'test-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await app.close();
});

describe('openai SDK embeddings.create', () => {
  it('asks for base64 when the caller sets no format and decodes it to the engine floats', async () => {
    const response = await client.embeddings.create({ model: 'embedder', input: ['hello world', 'second text'] });
    expect(sent.at(-1)).toEqual({ model: 'embedder', input: ['hello world', 'second text'], encoding_format: 'base64' });
    const expected = await embedder.embed(['hello world', 'second text']);
    expect(response.data.map((d) => d.embedding)).toEqual(expected.values.map((v) => Array.from(v)));
    expect(response.usage.prompt_tokens).toBe(expected.promptTokens);
    expect(response.model).toBe('embedder');
  });

  it('reads floats when encoding_format is float', async () => {
    const response = await client.embeddings.create({ model: 'embedder', input: 'hello world', encoding_format: 'float' });
    expect(sent.at(-1)).toMatchObject({ encoding_format: 'float' });
    expect(response.data[0].embedding).toEqual(Array.from((await embedder.embed(['hello world'])).values[0]));
  });

  it('passes dimensions and token-id input', async () => {
    const ids = Array.from((await embedder.tokenizer.encode('some tokens')).ids);
    const response = await client.embeddings.create({ model: 'embedder', input: [ids], dimensions: 2 });
    expect(response.data[0].embedding).toEqual(Array.from((await embedder.embed([ids], { dimensions: 2 })).values[0]));
    expect(response.usage.prompt_tokens).toBe(ids.length);
  });

  it('raises the SDK APIError with the status, message, type and param of a refusal', async () => {
    const error = await client.embeddings.create({ model: 'nope', input: 'x' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, type: 'invalid_request_error', code: 'SF_ERR_TEXT_MODEL_UNKNOWN' });
    expect((error as APIError).message).toContain("404 Text model 'nope' is not served here");
    const bad = await client.embeddings.create({ model: 'embedder', input: '' }).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(APIError);
    expect(bad).toMatchObject({ status: 400, param: 'input' });
  });
});

describe('openai SDK models', () => {
  it('lists and retrieves the served models', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['embedder', 'reranker']);
    expect(await client.models.retrieve('embedder')).toMatchObject({ id: 'embedder', object: 'model', owned_by: 'serve-fn' });
  });
});
