import type { AddressInfo } from 'node:net';
import { CohereClient, CohereClientV2, CohereError } from 'cohere-ai';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cohereVllmRoutes } from '../../src/protocol/cohere-vllm/cohere-vllm-routes.js';
import type { TextEngine } from '../../src/text/text-engine.js';
import { textModelFor, textModelSetOf } from '../helpers/text-model-fixture.js';

/** The official cohere-ai SDK (v1 CohereClient and v2 CohereClientV2), unchanged, pointed at serve-fn. */
let reranker: TextEngine;
let embedder: TextEngine;
let app: FastifyInstance;
let v1: CohereClient;
let v2: CohereClientV2;

const QUERY = 'what is deep learning';
const DOCUMENTS = ['deep learning is a kind of machine learning', 'cheese is made from milk', 'learning to ride a bike'];

beforeAll(async () => {
  reranker = await textModelFor('rerank', { name: 'reranker' });
  // Prompts named as Cohere's input types, as an E5-style export would name them.
  embedder = await textModelFor('embed', { name: 'embedder', pooling: 'mean', prompts: { search_query: 'query: ', search_document: 'passage: ' } });
  app = Fastify({ logger: false });
  await app.register(cohereVllmRoutes, { models: textModelSetOf([reranker, embedder]) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const options = { token: 'test-key', environment: `http://127.0.0.1:${port}`, maxRetries: 0 };
  v1 = new CohereClient(options);
  v2 = new CohereClientV2(options);
});

afterAll(async () => {
  await app.close();
});

/** The engine's ranking, computed by the test: indexes best first with their scores. */
async function engineRanking(): Promise<{ index: number; relevanceScore: number }[]> {
  const { values } = await reranker.rerank(QUERY, DOCUMENTS);
  return values.map((relevanceScore, index) => ({ index, relevanceScore })).sort((a, b) => b.relevanceScore - a.relevanceScore);
}

describe('CohereClientV2.rerank', () => {
  it('reads the ranked results, cut to top_n', async () => {
    const response = await v2.rerank({ model: 'reranker', query: QUERY, documents: DOCUMENTS, topN: 2 });
    const ranking = await engineRanking();
    expect(response.results.map(({ index, relevanceScore }) => ({ index, relevanceScore }))).toEqual(ranking.slice(0, 2));
    expect(response.meta?.apiVersion?.version).toBe('2');
    expect(typeof response.id).toBe('string');
  });

  it('raises a CohereError with the status of a refusal', async () => {
    const error = await v2.rerank({ model: 'nope', query: QUERY, documents: DOCUMENTS }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(CohereError);
    expect((error as CohereError).statusCode).toBe(404);
    expect(JSON.stringify((error as CohereError).body)).toContain("'nope'");
  });
});

describe('CohereClient (v1).rerank', () => {
  it('ranks string documents and returns their text when asked', async () => {
    const response = await v1.rerank({ model: 'reranker', query: QUERY, documents: DOCUMENTS, returnDocuments: true });
    const ranking = await engineRanking();
    expect(response.results).toEqual(ranking.map(({ index, relevanceScore }) => ({ index, relevanceScore, document: { text: DOCUMENTS[index] } })));
    expect(response.meta?.apiVersion?.version).toBe('1');
  });

  it('ranks object documents, and leaves documents out with returnDocuments false', async () => {
    const response = await v1.rerank({ model: 'reranker', query: QUERY, documents: DOCUMENTS.map((text) => ({ text })), topN: 1, returnDocuments: false });
    const ranking = await engineRanking();
    expect(response.results).toEqual([{ index: ranking[0].index, relevanceScore: ranking[0].relevanceScore }]);
  });
});

describe('CohereClientV2.embed', () => {
  it('reads float and base64 embeddings of texts embedded with the input type as prompt', async () => {
    const texts = ['what is deep learning', 'cheese'];
    const response = await v2.embed({ model: 'embedder', texts, inputType: 'search_query', embeddingTypes: ['float', 'base64'], outputDimension: 4 });
    const expected = await embedder.embed(texts, { promptName: 'search_query', dimensions: 4 });
    expect(response.embeddings.float).toEqual(expected.values.map((v) => Array.from(v)));
    const decoded = response.embeddings.base64!.map((text) => {
      const bytes = Buffer.from(text, 'base64');
      return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    });
    expect(decoded).toEqual(response.embeddings.float);
    expect(response.texts).toEqual(texts);
    expect(response.meta?.tokens?.inputTokens).toBe(expected.promptTokens);
  });
});
