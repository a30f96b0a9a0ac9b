import 'reflect-metadata';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../src/backends/backend.js';
import { Endpoint, Instances, Model, TextModel } from '../../src/decorators/index.js';
import type { ModelContext } from '../../src/definition/model-context.js';
import type { ExecuteRequest, ExecuteResponse } from '../../src/instance/tensor-model-api.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { QWEN3_QUERY_PROMPT, writeBertCrossEncoder, writeBertEncoder, writeQwen3Decoder, type BertClassifierWeights } from '../fixtures/text/text-model-folders.js';
import type { BertWeights, Qwen3Weights } from '../fixtures/text/text-model-weights.js';
import { referenceBertHidden, referenceBertLogits, referenceNormalize, referencePool, referenceQwen3Hidden, referenceSigmoid, type ReferencePooling } from '../helpers/text-reference.js';

/**
 * The no-code path (a model folder given to the server) and the class path (@TextModel over the
 * same folder) against an independent float64 forward pass of the same weights: tokenization by
 * the real tokenizer, then masking, pooling, normalisation and scoring by the reference.
 */

const root = scratchFolder('text-models');
let bert: BertWeights;
let reranker: BertClassifierWeights;
let qwen3: Qwen3Weights;

beforeAll(() => {
  bert = writeBertEncoder(join(root, 'bge-tiny'), { pooling: 'mean', normalize: true });
  reranker = writeBertCrossEncoder(join(root, 'rerank-tiny'));
  qwen3 = writeQwen3Decoder(join(root, 'qwen3-tiny'));
  // The class's module folder, where its @TextModel folder is looked for (the class itself lives in this file).
  writeFileSync(join(root, 'index.ts'), 'export {};\n');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TEXTS = ['what is deep learning?', 'The quick brown fox jumps over the lazy dog', '深度学习模型', 'paris'];

async function idsOf(folder: string, texts: readonly string[], pair?: string): Promise<{ ids: number[]; types: number[] }[]> {
  const tokenizer = await TextTokenizer.fromFile(join(root, folder, 'tokenizer.json'));
  return Promise.all(texts.map(async (text) => {
    const e = pair === undefined ? await tokenizer.encode(text) : await tokenizer.encodePair(pair, text);
    return { ids: Array.from(e.ids), types: Array.from(e.typeIds) };
  }));
}

/** Each sequence alone through the reference: no padding, so nothing the server pads can leak in. */
async function referenceEmbeddings(folder: string, texts: readonly string[], pooling: ReferencePooling, hidden: (ids: number[]) => (number[] | null)[]): Promise<number[][]> {
  return (await idsOf(folder, texts)).map(({ ids }) => referenceNormalize(referencePool(hidden(ids), ids.map(() => 1), pooling)));
}

const bertHidden = (ids: number[]) => referenceBertHidden(bert, { ids: [ids], mask: [ids.map(() => 1)], typeIds: [ids.map(() => 0)] })[0];
const qwenHidden = (ids: number[]) => referenceQwen3Hidden(qwen3, { ids: [ids], mask: [ids.map(() => 1)] })[0];

function expectRowsClose(actual: readonly number[], expected: readonly number[][]): void {
  const width = expected[0].length;
  expect(actual).toHaveLength(expected.length * width);
  expected.forEach((row, r) => row.forEach((x, c) => expect(actual[r * width + c]).toBeCloseTo(x, 4)));
}

function textTensor(name: string, texts: readonly string[]) {
  return { name, datatype: 'BYTES', shape: [texts.length], data: texts };
}

describe('text model folders served with no code', () => {
  let server: ServeFnServer;
  beforeAll(async () => {
    server = new ServeFnServer({ models: [], textFolders: [join(root, 'bge-tiny'), join(root, 'rerank-tiny'), join(root, 'qwen3-tiny')], collectProcessMetrics: false });
    await server.start();
  }, 60_000);
  afterAll(() => server.close());

  it('lists each folder as a KServe v2 model taking texts', async () => {
    const index = (await server.app.inject({ method: 'POST', url: '/v2/repository/index' })).json();
    expect(index).toEqual([
      { name: 'bge-tiny', version: '1', state: 'READY' }, { name: 'qwen3-tiny', version: '1', state: 'READY' }, { name: 'rerank-tiny', version: '1', state: 'READY' },
    ]);
    const metadata = (await server.app.inject({ method: 'GET', url: '/v2/models/bge-tiny' })).json();
    expect(metadata.inputs).toEqual([{ name: 'text', datatype: 'BYTES', shape: [-1] }]);
    expect(metadata.outputs).toEqual([{ name: 'embedding', datatype: 'FP32', shape: [-1, -1] }]);
  });

  it('embeds a batch of mixed lengths (mean pooling, normalised) as the reference does each text alone', async () => {
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/bge-tiny/infer', payload: { inputs: [textTensor('text', TEXTS)] } });
    expect(res.statusCode).toBe(200);
    const [output] = res.json().outputs;
    expect(output.shape).toEqual([TEXTS.length, 16]);
    expectRowsClose(output.data, await referenceEmbeddings('bge-tiny', TEXTS, 'mean', bertHidden));
  });

  it('ctx.infer reaches a text model by the name /v2 serves it under', async () => {
    const answer = (await server.infer('bge-tiny', { inputs: [{ name: 'text', datatype: 'BYTES', shape: [TEXTS.length], data: TEXTS.map((t) => Buffer.from(t)) }] })) as { outputs: { shape: number[]; data: Float32Array }[] };
    expect(answer.outputs[0].shape).toEqual([TEXTS.length, 16]);
    expectRowsClose(Array.from(answer.outputs[0].data), await referenceEmbeddings('bge-tiny', TEXTS, 'mean', bertHidden));
  });

  it('embeds with last-token pooling over left padding and the query prompt, as Qwen3-Embedding is served', async () => {
    const res = await server.app.inject({
      method: 'POST', url: '/v2/models/qwen3-tiny/infer',
      payload: { inputs: [textTensor('text', TEXTS)], parameters: { prompt_name: 'query' } },
    });
    expect(res.statusCode).toBe(200);
    expectRowsClose(res.json().outputs[0].data, await referenceEmbeddings('qwen3-tiny', TEXTS.map((t) => QWEN3_QUERY_PROMPT + t), 'last-token', qwenHidden));
  });

  it('reranks (query, text) pairs with the cross-encoder, sigmoid of its logit', async () => {
    const query = 'what is the capital of france';
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/rerank-tiny/infer', payload: { inputs: [textTensor('query', [query]), textTensor('text', TEXTS)] } });
    expect(res.statusCode).toBe(200);
    const pairs = await idsOf('rerank-tiny', TEXTS, query);
    const expected = pairs.map(({ ids, types }) => referenceSigmoid(referenceBertLogits(reranker, { ids: [ids], mask: [ids.map(() => 1)], typeIds: [types] })[0][0]));
    res.json().outputs[0].data.forEach((score: number, i: number) => expect(score).toBeCloseTo(expected[i], 4));
  });

  it('refuses 10 000 texts, a 50 MB text and bad bytes with 4xx in TEI\'s shape, losing nothing it accepted', async () => {
    const inFlight = server.app.inject({ method: 'POST', url: '/embed', payload: { model: 'bge-tiny', inputs: TEXTS } });
    const many = await server.app.inject({ method: 'POST', url: '/embed', payload: { model: 'bge-tiny', inputs: Array.from({ length: 10_000 }, () => 'a') } });
    expect([many.statusCode, many.json()]).toEqual([413, { error: 'batch size 10000 > maximum allowed batch size 32', error_type: 'Validation' }]);
    const huge = await server.app.inject({ method: 'POST', url: '/embed', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ model: 'bge-tiny', inputs: 'x'.repeat(50 * 1024 * 1024) }) });
    expect(huge.statusCode).toBe(413);
    expect(huge.json().error_type).toBe('Validation');
    const bytes = await server.app.inject({ method: 'POST', url: '/embed', headers: { 'content-type': 'application/json' }, payload: Buffer.from([0x7b, 0x22, 0x69, 0x6e, 0x70, 0x75, 0x74, 0x73, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]) });
    expect(bytes.statusCode).toBe(422);
    const ids = await server.app.inject({ method: 'POST', url: '/embed', payload: { model: 'bge-tiny', inputs: [[2, 99999, 3]] } });
    expect([ids.statusCode, ids.json().error_type]).toEqual([422, 'Validation']);
    const accepted = await inFlight;
    expect(accepted.statusCode).toBe(200);
    expectRowsClose(accepted.json().flat(), await referenceEmbeddings('bge-tiny', TEXTS, 'mean', bertHidden));
  });

  it('answers bad input with a 400 and keeps serving', async () => {
    const bad = await server.app.inject({ method: 'POST', url: '/v2/models/bge-tiny/infer', payload: { inputs: [textTensor('text', [])] } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toContain('inputs');
    const ok = await server.app.inject({ method: 'POST', url: '/v2/models/bge-tiny/infer', payload: { inputs: [textTensor('text', ['paris'])] } });
    expect(ok.statusCode).toBe(200);
  });
});

/** The same BERT folder behind a class: serve-fn tokenizes, batches and pools; the class runs the ONNX file. */
@Model({ name: 'bge-class' })
@Instances(1, { inline: true })
@TextModel({ task: 'embed', folder: 'bge-tiny' })
class BgeEmbedder {
  private session!: BackendSession;

  async initialize(ctx: ModelContext): Promise<void> {
    this.session = await ctx.loadModel('bge-tiny/onnx/model.onnx');
  }

  async execute(requests: readonly ExecuteRequest[]): Promise<ExecuteResponse[]> {
    return Promise.all(requests.map(async (request) => {
      const feeds = Object.fromEntries(['input_ids', 'attention_mask', 'token_type_ids'].map((name) => [name, request.input(name)!]));
      const { last_hidden_state } = await this.session.run(feeds, ['last_hidden_state']);
      return { outputs: [last_hidden_state] };
    }));
  }

  async finalize(): Promise<void> {
    await this.session.dispose();
  }
}

describe('a @TextModel class', () => {
  let server: ServeFnServer;
  beforeAll(async () => {
    server = new ServeFnServer({ models: [BgeEmbedder], moduleUrl: pathToFileURL(join(root, 'index.ts')).href, collectProcessMetrics: false });
    await server.start();
  }, 60_000);
  afterAll(() => server.close());

  it('is served as the folder is: texts in on /v2, the folder\'s pooling and the reference embeddings out', async () => {
    const metadata = (await server.app.inject({ method: 'GET', url: '/v2/models/bge-class' })).json();
    expect(metadata.inputs).toEqual([{ name: 'text', datatype: 'BYTES', shape: [-1] }]);
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/bge-class/infer', payload: { inputs: [textTensor('text', TEXTS)] } });
    expect(res.statusCode).toBe(200);
    expectRowsClose(res.json().outputs[0].data, await referenceEmbeddings('bge-tiny', TEXTS, 'mean', bertHidden));
  });
});

/** A class with an endpoint of its own, for the clash with TEI's /predict. */
@Model({ name: 'sentiment' })
@Instances(1, { inline: true })
class SentimentEndpoint {
  @Endpoint('/predict')
  predict(): { ok: boolean } {
    return { ok: true };
  }
}

/** The same embedder class at version 2, to check its text view keeps the class's version. */
@Model({ name: 'bge-class-v2', version: '2' })
@Instances(1, { inline: true })
@TextModel({ task: 'embed', folder: 'bge-tiny' })
class BgeEmbedderV2 extends BgeEmbedder {}

describe('text models beside the rest of a server', () => {
  const moduleUrl = () => pathToFileURL(join(root, 'index.ts')).href;

  it('prepares once: prepare() for the OpenAPI document, then start(), builds every text model once', async () => {
    const server = new ServeFnServer({ models: [], textFolders: [join(root, 'bge-tiny')], collectProcessMetrics: false });
    try {
      await server.prepare();
      await server.start();
      expect((await server.app.inject({ method: 'POST', url: '/embed', payload: { inputs: 'paris' } })).statusCode).toBe(200);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("refuses an @Endpoint on a text route's path, naming both, and two models of one name", async () => {
    const clash = new ServeFnServer({ models: [SentimentEndpoint], moduleUrl: moduleUrl(), textFolders: [join(root, 'rerank-tiny')], collectProcessMetrics: false });
    await expect(clash.prepare()).rejects.toMatchObject({ code: 'SF_ERR_ENDPOINT_DUPLICATE', message: expect.stringContaining('SentimentEndpoint.predict') });
    const twice = new ServeFnServer({ models: [], textFolders: [join(root, 'bge-tiny'), join(root, 'bge-tiny')], collectProcessMetrics: false });
    await expect(twice.prepare()).rejects.toMatchObject({ code: 'SF_ERR_MODEL_NAME_TAKEN', message: expect.stringContaining("two models would be served as 'bge-tiny'") });
  }, 60_000);

  it("serves a @TextModel class's text view under the class's version", async () => {
    const server = new ServeFnServer({ models: [BgeEmbedderV2], moduleUrl: moduleUrl(), collectProcessMetrics: false });
    try {
      await server.start();
      const res = await server.app.inject({ method: 'POST', url: '/v2/models/bge-class-v2/versions/2/infer', payload: { inputs: [textTensor('text', ['paris'])] } });
      expect([res.statusCode, res.json().model_version]).toEqual([200, '2']);
    } finally {
      await server.close();
    }
  }, 60_000);
});
