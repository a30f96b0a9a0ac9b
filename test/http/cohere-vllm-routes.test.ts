import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { cohereVllmRoutes } from '../../src/protocol/cohere-vllm/cohere-vllm-routes.js';
import type { TextEngine } from '../../src/text/text-engine.js';
import { textModelFor, textModelSetOf } from '../helpers/text-model-fixture.js';

let reranker: TextEngine;
let classifier: TextEngine;
let embedder: TextEngine;
let plainEmbedder: TextEngine;
let app: FastifyInstance;

const QUERY = 'what is deep learning';
const DOCUMENTS = ['deep learning is a kind of machine learning', 'cheese is made from milk', 'learning to ride a bike', 'deep water'];

beforeAll(async () => {
  reranker = await textModelFor('rerank', { name: 'reranker', limits: { maxClientBatchSize: 4 } });
  classifier = await textModelFor('classify', { name: 'classifier' });
  embedder = await textModelFor('embed', { name: 'embedder', pooling: 'mean' });
  plainEmbedder = await textModelFor('embed', { name: 'plain-embedder', pooling: 'mean', prompts: {} });
  app = Fastify({ logger: false });
  await app.register(cohereVllmRoutes, { models: textModelSetOf([reranker, classifier, embedder, plainEmbedder]) });
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

afterEach(() => {
  vi.restoreAllMocks();
});

function post(url: string, body: unknown) {
  return app.inject({ method: 'POST', url, payload: body as object });
}

/** The engine's scores, ranked here by the test: indexes best first. */
async function engineRanking(query: string, documents: readonly string[]): Promise<{ index: number; score: number }[]> {
  const { values } = await reranker.rerank(query, documents);
  return values.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score);
}

describe.each(['/v1/rerank', '/v2/rerank'])('POST %s', (url) => {
  it('ranks string documents by the engine score, best first, with their text, usage and meta', async () => {
    const response = await post(url, { model: 'reranker', query: QUERY, documents: DOCUMENTS });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    const ranking = await engineRanking(QUERY, DOCUMENTS);
    expect(body.results).toEqual(ranking.map(({ index, score }) => ({ index, relevance_score: score, document: { text: DOCUMENTS[index] } })));
    body.results.forEach((r: { relevance_score: number }) => expect(r.relevance_score).toBeGreaterThan(0));
    body.results.forEach((r: { relevance_score: number }) => expect(r.relevance_score).toBeLessThan(1));
    const tokens = (await reranker.rerank(QUERY, DOCUMENTS)).promptTokens;
    expect(body.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    expect(body.meta).toEqual({ api_version: { version: url.slice(2, 3) }, tokens: { input_tokens: tokens } });
    expect(body.model).toBe('reranker');
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('ranks object documents by their text and answers the object given', async () => {
    const documents = DOCUMENTS.map((text, i) => ({ text, title: `doc ${i}` }));
    const body = (await post(url, { model: 'reranker', query: QUERY, documents })).json();
    const ranking = await engineRanking(QUERY, DOCUMENTS);
    expect(body.results.map((r: { index: number }) => r.index)).toEqual(ranking.map((r) => r.index));
    expect(body.results[0].document).toEqual(documents[ranking[0].index]);
  });

  it('keeps the top_n best, and leaves documents out when return_documents is false', async () => {
    const body = (await post(url, { model: 'reranker', query: QUERY, documents: DOCUMENTS, top_n: 2, return_documents: false })).json();
    const ranking = await engineRanking(QUERY, DOCUMENTS);
    expect(body.results).toEqual(ranking.slice(0, 2).map(({ index, score }) => ({ index, relevance_score: score })));
  });

  it.each([
    ['top_n 0 (vLLM: all)', 0],
    ['top_n above the count', 10],
  ])('answers every document for %s', async (_what, topN) => {
    const body = (await post(url, { model: 'reranker', query: QUERY, documents: DOCUMENTS, top_n: topN })).json();
    expect(body.results).toHaveLength(DOCUMENTS.length);
  });

  it.each([
    ['a missing query', { model: 'reranker', documents: DOCUMENTS }, 'query'],
    ['a query that is not a string', { model: 'reranker', query: 3, documents: DOCUMENTS }, 'query'],
    ['missing documents', { model: 'reranker', query: QUERY }, 'documents'],
    ['documents that are not an array', { model: 'reranker', query: QUERY, documents: 'one' }, 'documents'],
    ['a document object without text', { model: 'reranker', query: QUERY, documents: [{ title: 'x' }] }, 'documents'],
    ['a negative top_n', { model: 'reranker', query: QUERY, documents: DOCUMENTS, top_n: -1 }, 'top_n'],
    ['a return_documents that is not boolean', { model: 'reranker', query: QUERY, documents: DOCUMENTS, return_documents: 'yes' }, 'return_documents'],
  ])('refuses %s with a 400 in vLLM shape', async (_what, body, param) => {
    const response = await post(url, body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ type: 'Bad Request', code: 400, param });
  });

  it('refuses an empty documents list, an unknown model and a model of another task', async () => {
    const empty = await post(url, { model: 'reranker', query: QUERY, documents: [] });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.message).toContain('cannot be empty');
    const unknown = await post(url, { model: 'nope', query: QUERY, documents: DOCUMENTS });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ type: 'Not Found', code: 404 });
    const wrong = await post(url, { model: 'embedder', query: QUERY, documents: DOCUMENTS });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error.message).toContain('re-ranker');
  });

  it('refuses more documents than the client batch limit', async () => {
    const response = await post(url, { model: 'reranker', query: QUERY, documents: [...DOCUMENTS, 'one too many'] });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toBe('batch size 5 > maximum allowed batch size 4');
  });
});

/** A float vector's signs as bits, eight a byte, first value in the high bit: the packing Cohere and vLLM describe, computed here independently. */
function signBits(vector: readonly number[]): number[] {
  const bytes: number[] = [];
  for (let i = 0; i < vector.length; i += 8) bytes.push(parseInt(vector.slice(i, i + 8).map((x) => (x >= 0 ? '1' : '0')).join(''), 2));
  return bytes;
}

describe('POST /v2/embed', () => {
  const TEXTS = ['deep learning', 'cheese and milk'];

  it('embeds texts as floats by default, echoing the texts and counting tokens in meta', async () => {
    const response = await post('/v2/embed', { model: 'embedder', texts: TEXTS });
    expect(response.statusCode).toBe(200);
    const expected = await embedder.embed(TEXTS);
    expect(response.json()).toEqual({
      id: expect.stringMatching(/^embd-/),
      embeddings: { float: expected.values.map((v) => Array.from(v)) },
      texts: TEXTS,
      meta: { api_version: { version: '2' }, tokens: { input_tokens: expected.promptTokens } },
    });
  });

  it('applies the prompt input_type names', async () => {
    const body = (await post('/v2/embed', { model: 'embedder', texts: TEXTS, input_type: 'query' })).json();
    const expected = await embedder.embed(TEXTS, { promptName: 'query' });
    expect(body.embeddings.float).toEqual(expected.values.map((v) => Array.from(v)));
    expect(body.embeddings.float).not.toEqual((await embedder.embed(TEXTS)).values.map((v) => Array.from(v)));
  });

  it("refuses an input_type the model has no prompt for, and takes any on a model that has no prompts", async () => {
    const refused = await post('/v2/embed', { model: 'embedder', texts: TEXTS, input_type: 'search_query' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toContain('search_query');
    const plain = (await post('/v2/embed', { model: 'plain-embedder', texts: TEXTS, input_type: 'search_query' })).json();
    expect(plain.embeddings.float).toEqual((await plainEmbedder.embed(TEXTS)).values.map((v) => Array.from(v)));
  });

  it('answers every asked embedding type from the same vectors', async () => {
    const body = (await post('/v2/embed', { model: 'embedder', texts: TEXTS, embedding_types: ['float', 'base64', 'binary', 'ubinary'] })).json();
    const floats: number[][] = body.embeddings.float;
    const decoded = body.embeddings.base64.map((text: string) => {
      const bytes = Buffer.from(text, 'base64');
      return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    });
    expect(decoded).toEqual(floats);
    expect(body.embeddings.ubinary).toEqual(floats.map(signBits));
    expect(body.embeddings.binary).toEqual(floats.map((v) => signBits(v).map((b) => b - 128)));
  });

  it('keeps output_dimension values, as the engine does', async () => {
    const body = (await post('/v2/embed', { model: 'embedder', texts: TEXTS, output_dimension: 4 })).json();
    expect(body.embeddings.float).toEqual((await embedder.embed(TEXTS, { dimensions: 4 })).values.map((v) => Array.from(v)));
  });

  it('truncates at the end by default, at the start for START, and refuses a long text for NONE', async () => {
    const long = Array.from({ length: 60 }, (_, i) => (i < 30 ? 'cheese' : 'deep')).join(' ');
    const end = (await post('/v2/embed', { model: 'embedder', texts: [long] })).json();
    const start = (await post('/v2/embed', { model: 'embedder', texts: [long], truncate: 'START' })).json();
    expect(end.embeddings.float).toEqual((await embedder.embed([long], { truncate: true, truncationDirection: 'right' })).values.map((v) => Array.from(v)));
    expect(start.embeddings.float).toEqual((await embedder.embed([long], { truncate: true, truncationDirection: 'left' })).values.map((v) => Array.from(v)));
    expect(start.embeddings.float).not.toEqual(end.embeddings.float);
    const none = await post('/v2/embed', { model: 'embedder', texts: [long], truncate: 'NONE' });
    expect(none.statusCode).toBe(400);
    expect(none.json().error.message).toContain('must have less than');
  });

  it.each([
    ['missing texts', { model: 'embedder' }, 'texts'],
    ['images', { model: 'embedder', images: ['data:image/png;base64,AAAA'] }, 'images'],
    ['an embedding type vLLM does not compute', { model: 'embedder', texts: TEXTS, embedding_types: ['int8'] }, 'embedding_types'],
    ['an unknown truncate', { model: 'embedder', texts: TEXTS, truncate: 'MIDDLE' }, 'truncate'],
    ['max_tokens', { model: 'embedder', texts: TEXTS, max_tokens: 5 }, 'max_tokens'],
    ['output_dimension 0', { model: 'embedder', texts: TEXTS, output_dimension: 0 }, 'output_dimension'],
  ])('refuses %s with a 400 naming the field', async (_what, body, param) => {
    const response = await post('/v2/embed', body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ param, code: 400 });
  });

  it('refuses an empty texts list', async () => {
    const response = await post('/v2/embed', { model: 'embedder', texts: [] });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toContain('cannot be empty');
  });
});

describe.each(['/score', '/v1/score'])('POST %s', (url) => {
  it('scores one query against every document (1:N) as the engine does, in order', async () => {
    const body = (await post(url, { model: 'reranker', queries: QUERY, documents: DOCUMENTS })).json();
    const expected = await reranker.rerank(QUERY, DOCUMENTS);
    expect(body).toEqual({
      id: expect.stringMatching(/^score-/),
      object: 'list',
      created: expect.any(Number),
      model: 'reranker',
      data: expected.values.map((score, index) => ({ index, object: 'score', score })),
      usage: { prompt_tokens: expected.promptTokens, total_tokens: expected.promptTokens, completion_tokens: 0, prompt_tokens_details: null },
    });
  });

  it.each([
    ['queries/items', 'queries', 'items'],
    ['data_1/data_2', 'data_1', 'data_2'],
    ['text_1/text_2', 'text_1', 'text_2'],
  ])('zips two lists of one length (N:N) given as %s', async (_what, first, second) => {
    const queries = ['deep learning', 'cheese', 'bikes'];
    const documents = DOCUMENTS.slice(0, 3);
    const body = (await post(url, { model: 'reranker', [first]: queries, [second]: documents })).json();
    const expected = await Promise.all(queries.map((q, i) => reranker.rerank(q, [documents[i]])));
    expect(body.data.map((d: { score: number }) => d.score)).toEqual(expected.map((a) => a.values[0]));
    expect(body.usage.prompt_tokens).toBe(expected.reduce((sum, a) => sum + a.promptTokens, 0));
  });

  it('answers raw logits with use_activation false', async () => {
    const body = (await post(url, { model: 'reranker', text_1: QUERY, text_2: DOCUMENTS, use_activation: false })).json();
    expect(body.data.map((d: { score: number }) => d.score)).toEqual((await reranker.rerank(QUERY, DOCUMENTS, { rawScores: true })).values);
  });

  it.each([
    ['no pair of fields', { model: 'reranker', query: QUERY }, 'Give the texts to score'],
    ['lengths 2:3', { model: 'reranker', queries: ['a', 'b'], documents: ['x', 'y', 'z'] }, 'Input lengths must be either 1:1, 1:N or N:N'],
    ['no first text', { model: 'reranker', queries: [], documents: ['x'] }, 'At least one text element must be given'],
    ['no second text', { model: 'reranker', queries: ['a'], documents: [] }, 'At least one text_pair element must be given'],
    ['a multimodal part', { model: 'reranker', queries: 'a', documents: [{ content: [] }] }, 'must be a string or an array of strings'],
    ['more pairs than the batch limit', { model: 'reranker', queries: ['a', 'b', 'c', 'd', 'e'], documents: ['1', '2', '3', '4', '5'] }, 'batch size 5 > maximum allowed batch size 4'],
  ])('refuses %s with a 400', async (_what, body, message) => {
    const response = await post(url, body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toContain(message);
  });
});

describe.each(['/classify', '/v1/classify'])('POST %s', (url) => {
  it('answers each text its best label and every probability in the label order', async () => {
    const texts = ['I love this', 'this is awful'];
    const body = (await post(url, { model: 'classifier', input: texts })).json();
    const expected = await classifier.predict(texts);
    const labels = classifier.info.labels;
    expect(body.id).toMatch(/^classify-/);
    expect(body.object).toBe('list');
    expect(body.data).toEqual(
      expected.values.map((scored, index) => ({
        index,
        label: scored[0].label,
        probs: labels.map((label) => scored.find((s) => s.label === label)!.score),
        num_classes: labels.length,
      })),
    );
    body.data.forEach((d: { probs: number[] }) => expect(d.probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5));
    expect(body.usage.prompt_tokens).toBe(expected.promptTokens);
  });

  it('takes one string, and answers logits with use_activation false', async () => {
    const body = (await post(url, { model: 'classifier', input: 'just one', use_activation: false })).json();
    const raw = (await classifier.predict(['just one'], { rawScores: true })).values[0];
    expect(body.data).toHaveLength(1);
    expect(body.data[0].probs).toEqual(classifier.info.labels.map((label) => raw.find((s) => s.label === label)!.score));
  });

  it.each([
    ['token ids', { model: 'classifier', input: [1, 2, 3] }, 'token ids'],
    ['an empty string', { model: 'classifier', input: '' }, 'cannot be empty'],
    ['a missing input', { model: 'classifier' }, '`input`'],
  ])('refuses %s with a 400', async (_what, body, message) => {
    const response = await post(url, body);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ param: 'input', code: 400 });
    expect(response.json().error.message).toContain(message);
  });
});

it('answers a server fault with a generic 500 in vLLM shape, and keeps serving', async () => {
  vi.spyOn(reranker, 'rerank').mockRejectedValueOnce(new Error('secret internals'));
  const response = await post('/v1/rerank', { model: 'reranker', query: QUERY, documents: DOCUMENTS });
  expect(response.statusCode).toBe(500);
  expect(response.json().error).toMatchObject({ type: 'Internal Server Error', code: 500 });
  expect(response.json().error.message).not.toContain('secret');
  expect((await post('/v1/rerank', { model: 'reranker', query: QUERY, documents: DOCUMENTS })).statusCode).toBe(200);
});

it('documents the routes under their tag in OpenAPI', async () => {
  const swagger = (await import('@fastify/swagger')).default;
  const documented = Fastify({ logger: false });
  await documented.register(swagger, { openapi: { openapi: '3.0.3', info: { title: 't', version: '1' } } });
  await documented.register(cohereVllmRoutes, { models: textModelSetOf([reranker]) });
  await documented.ready();
  const spec = documented.swagger() as { paths: Record<string, { post: { tags: string[] } }> };
  await documented.close();
  expect(Object.keys(spec.paths).sort()).toEqual(['/classify', '/score', '/v1/classify', '/v1/rerank', '/v1/score', '/v2/embed', '/v2/rerank']);
  expect(spec.paths['/v2/rerank'].post.tags).toEqual(['Cohere, Jina and vLLM rerank, embed, score and classify']);
});
