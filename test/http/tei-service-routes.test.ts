import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TEXT_PAYLOAD_LIMIT } from '../../src/protocol/text-routes.js';
import { DEFAULT_TEXT_LIMITS, TextEngine } from '../../src/text/text-engine.js';
import { expectTeiError, post, teiApp, teiAppsByTask, type TeiAppsByTask } from '../helpers/tei-app.js';
import { fakeForward, forwardOver, textModelFor } from '../helpers/text-model-fixture.js';

/** The TEI routes around the inference ones: POST / by task, /info, the health checks, model choice, failures and the docs. */
let tei: TeiAppsByTask;

beforeAll(async () => {
  tei = await teiAppsByTask();
});

afterAll(async () => {
  await Promise.all([tei.embedApp, tei.classifyApp, tei.rerankApp, tei.sparseApp].map((app) => app?.close()));
});

describe('POST / and /invocations', () => {
  it('answer as the route of the model’s task: /embed, /predict, /rerank, /embed_sparse', async () => {
    const cases: [FastifyInstance, string, object][] = [
      [tei.embedApp, '/embed', { inputs: ['a', 'b'] }],
      [tei.classifyApp, '/predict', { inputs: 'I like you' }],
      [tei.rerankApp, '/rerank', { query: 'q', texts: ['a', 'b'] }],
      [tei.sparseApp, '/embed_sparse', { inputs: 'deep learning' }],
    ];
    for (const [app, route, body] of cases) {
      const own = await post(app, route, body);
      expect(own.statusCode, own.body).toBe(200);
      for (const url of ['/', '/invocations']) {
        const res = await post(app, url, body);
        expect(res.statusCode, `${url} as ${route}: ${res.body}`).toBe(200);
        expect(res.json()).toEqual(own.json());
      }
    }
    expectTeiError(await post(tei.rerankApp, '/', { query: 'q', texts: [] }), 400, 'Empty');
  });
});

describe('GET /info, /health, /ping, /', () => {
  it('/info describes an embedder as TEI does', async () => {
    const res = await tei.embedApp.inject({ method: 'GET', url: '/info' });
    expect(res.statusCode).toBe(200);
    const info = res.json() as Record<string, unknown>;
    const { info: model } = tei.embedder;
    expect(info).toMatchObject({
      model_id: model.modelId,
      model_sha: null,
      served_model_name: model.name,
      model_type: { embedding: { pooling: (model.pooling ?? 'cls').replace('-', '_') } },
      max_concurrent_requests: model.limits.maxConcurrentRequests,
      max_input_length: model.maxInputLength,
      max_batch_tokens: model.limits.maxBatchTokens,
      max_batch_requests: model.limits.maxBatchRequests ?? null,
      max_client_batch_size: model.limits.maxClientBatchSize,
      auto_truncate: model.limits.autoTruncate,
      version: '1.2.3',
      sha: null,
      docker_label: null,
    });
    expect(typeof info.model_dtype).toBe('string');
    expect(Number.isInteger(info.tokenization_workers)).toBe(true);
  });

  it('/info gives a classifier’s and a reranker’s labels both ways', async () => {
    for (const [app, model, kind] of [[tei.classifyApp, tei.classifier, 'classifier'], [tei.rerankApp, tei.reranker, 'reranker']] as const) {
      const info = (await app.inject({ method: 'GET', url: '/info' })).json() as { model_type: Record<string, { id2label: Record<string, string>; label2id: Record<string, number> }> };
      expect(Object.keys(info.model_type)).toEqual([kind]);
      const { id2label, label2id } = info.model_type[kind];
      expect(Object.keys(id2label)).toHaveLength(model.info.labels.length);
      model.info.labels.forEach((label, id) => {
        expect(id2label[String(id)]).toBe(label);
        expect(label2id[label]).toBe(id);
      });
    }
    const sparse = (await tei.sparseApp.inject({ method: 'GET', url: '/info' })).json() as { model_type: unknown };
    expect(sparse.model_type).toEqual({ embedding: { pooling: 'splade' } });
  });

  it('/health, /ping and GET / answer 200 with an empty body while every model is ready, 503 Unhealthy otherwise', async () => {
    for (const url of ['/health', '/ping', '/']) {
      const res = await tei.embedApp.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe('');
    }
    const down: TextEngine = Object.assign(Object.create(tei.embedder) as TextEngine, { ready: () => false });
    const app = await teiApp([down]);
    try {
      for (const url of ['/health', '/ping', '/']) {
        const res = await app.inject({ method: 'GET', url });
        expectTeiError(res, 503, 'Unhealthy', /^unhealthy$/);
      }
    } finally {
      await app.close();
    }
  });
});

describe('several models', () => {
  it('the `model` field (a serve-fn extension) picks one; each route otherwise takes the one able to do its task', async () => {
    const named = await textModelFor('embed', { name: 'second-embedder', pooling: 'mean' });
    const app = await teiApp([tei.embedder, named, tei.reranker]);
    try {
      const rerank = await post(app, '/rerank', { query: 'q', texts: ['a'] });
      expect(rerank.statusCode, rerank.body).toBe(200);
      // TEI's /predict serves a tei.reranker too: with no tei.classifier, the one tei.reranker answers it.
      const predict = await post(app, '/predict', { inputs: ['q', 'a'] });
      expect(predict.statusCode, predict.body).toBe(200);
      expect((predict.json() as { label: string }[]).map((l) => l.label)).toEqual(tei.reranker.info.labels);
      const picked = await post(app, '/embed', { inputs: 'a', model: 'second-embedder' });
      expect(picked.statusCode, picked.body).toBe(200);
      expect(picked.json()).toEqual([Array.from((await named.embed(['a'])).values[0])]);
      expectTeiError(await post(app, '/embed', { inputs: 'a' }), 422, 'Validation', /model/);
      expectTeiError(await post(app, '/embed', { inputs: 'a', model: 'nope' }), 404, 'Validation', /nope/);
      expectTeiError(await post(app, '/embed', { inputs: 'a', model: 7 }), 422, 'Validation', /model/);
      const info = await app.inject({ method: 'GET', url: '/info?model=second-embedder' });
      expect((info.json() as { served_model_name: string }).served_model_name).toBe('second-embedder');
    } finally {
      await app.close();
    }
  });
});

describe('failures', () => {
  it('more inputs in flight than max_concurrent_requests is 429 Overloaded', async () => {
    const app = await teiApp([await textModelFor('embed', { limits: { maxConcurrentRequests: 1 } })]);
    try {
      expectTeiError(await post(app, '/embed', { inputs: ['a', 'b'] }), 429, 'Overloaded', /^Model is overloaded$/);
      expect((await post(app, '/embed', { inputs: 'a' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('/embed_all whose answer would pass --max-answer-bytes is 413 Validation naming the limit', async () => {
    const app = await teiApp([await textModelFor('embed', { limits: { maxAnswerBytes: 1000 } })]);
    try {
      expectTeiError(await post(app, '/embed_all', { inputs: ['a b c d e'] }), 413, 'Validation', /over the limit of 1000 bytes \(--max-answer-bytes\)/);
      expect((await post(app, '/embed_all', { inputs: 'a' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('a forward pass that fails is 424 Backend, logged with its error but answered without it, and the server keeps serving', async () => {
    const forward = fakeForward('embed', tei.embedder.tokenizer.vocabSize);
    const lost = new Error('device lost');
    const failing = { ...forward, infer: async () => Promise.reject(lost) };
    const logged: unknown[] = [];
    const broken = new TextEngine({ ...tei.embedder.spec, name: 'broken' }, tei.embedder.tokenizer, forwardOver(failing), { limits: DEFAULT_TEXT_LIMITS, computeType: 'cpu', log: (_message, err) => logged.push(err) });
    const app = await teiApp([broken]);
    try {
      const res = await post(app, '/embed', { inputs: 'a' });
      expectTeiError(res, 424, 'Backend', /^Model 'broken' failed to run its forward pass; the server log has the error\.$/);
      expect(res.body).not.toContain('device lost');
      expect(logged).toEqual([lost]);
      expect((await post(app, '/tokenize', { inputs: 'a' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('an unexpected fault is a 500 that does not tell its message; a body of another type is 415, one over the limit 413', async () => {
    const faulty: TextEngine = Object.assign(Object.create(tei.embedder) as TextEngine, { embed: async () => Promise.reject(new Error('secret at /srv/key')) });
    const app = await teiApp([faulty]);
    try {
      const res = await post(app, '/embed', { inputs: 'a' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ error_type: 'Backend' });
      expect(res.body).not.toContain('secret');
      const text = await app.inject({ method: 'POST', url: '/embed', headers: { 'content-type': 'text/plain' }, payload: 'hello' });
      expectTeiError(text, 415, 'Validation');
      const huge = await post(app, '/embed', { inputs: 'a'.repeat(DEFAULT_TEXT_PAYLOAD_LIMIT + 1) });
      expectTeiError(huge, 413, 'Validation', new RegExp(String(DEFAULT_TEXT_PAYLOAD_LIMIT)));
    } finally {
      await app.close();
    }
  });
});

describe('OpenAPI', () => {
  it('documents every TEI route under TEI’s tag', async () => {
    const app = await teiApp([tei.embedder], true);
    try {
      const doc = app.swagger() as { paths: Record<string, Record<string, { tags?: string[] }>> };
      const routes = ['/embed', '/embed_all', '/embed_sparse', '/predict', '/rerank', '/similarity', '/tokenize', '/decode', '/invocations'];
      for (const route of routes) expect(doc.paths[route]?.post?.tags, route).toEqual(['Text Embeddings Inference']);
      for (const route of ['/info', '/health', '/ping']) expect(doc.paths[route]?.get?.tags, route).toEqual(['Text Embeddings Inference']);
      expect(Object.keys(doc.paths['/'] ?? {}).sort()).toEqual(['get', 'post']);
    } finally {
      await app.close();
    }
  });
});
