import { status, type ServiceError } from '@grpc/grpc-js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_CHARACTERS_PER_TOKEN } from '../../src/text/text-characters.js';
import { expectTeiError, post } from '../helpers/tei-app.js';
import { grpcTexts, kserveTexts, textProtocolApps, type TextProtocolApps } from '../helpers/text-protocol-apps.js';

let apps: TextProtocolApps;
beforeAll(async () => {
  apps = await textProtocolApps();
});
afterAll(() => apps.close());
afterEach(() => {
  vi.restoreAllMocks();
});

/** A JSON body written by hand, so the lone surrogate travels as the `\ud800` escape JSON.parse accepts. */
const raw = (app: 'tei' | 'family', url: string, json: string): Promise<LightMyRequestResponse> =>
  apps[app].inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: json });

const LONE = String.raw`a\ud800b`;

function expectFamilyError(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json().error.message).toMatch(/lone surrogate/);
}

describe('a lone surrogate is refused on every text route', () => {
  it.each([
    ['/embed', `{"inputs":"${LONE}"}`],
    ['/embed', `{"inputs":["ok","${LONE}"]}`],
    ['/embed_all', `{"inputs":"${LONE}"}`],
    ['/embed_sparse', `{"inputs":"${LONE}"}`],
    ['/predict', `{"inputs":"${LONE}"}`],
    ['/predict', `{"inputs":["ok","${LONE}"]}`],
    ['/rerank', `{"query":"${LONE}","texts":["ok"]}`],
    ['/rerank', `{"query":"ok","texts":["${LONE}"]}`],
    ['/similarity', `{"inputs":{"source_sentence":"ok","sentences":["${LONE}"]}}`],
    ['/tokenize', `{"inputs":"${LONE}","model":"tiny-embed"}`],
  ])('TEI %s %s: 422 Validation', async (url, json) => {
    expectTeiError(await raw('tei', url, json), 422, 'Validation', /lone surrogate/);
  });

  it.each([
    ['/v1/embeddings', `{"input":"${LONE}","model":"tiny-embed"}`],
    ['/v1/rerank', `{"query":"ok","documents":["${LONE}"]}`],
    ['/v2/rerank', `{"query":"${LONE}","documents":["ok"]}`],
    ['/v2/embed', `{"texts":["${LONE}"],"model":"tiny-embed"}`],
    ['/score', `{"queries":"ok","documents":["${LONE}"]}`],
    ['/classify', `{"input":"${LONE}"}`],
  ])('OpenAI, Cohere, vLLM %s %s: 400', async (url, json) => {
    expectFamilyError(await raw('family', url, json));
  });

  it('KServe HTTP: 400 naming the tensor; gRPC: the bytes are not UTF-8, INVALID_ARGUMENT', async () => {
    const payload = String.raw`{"inputs":[{"name":"text","datatype":"BYTES","shape":[1],"data":["a\ud800b"]}]}`;
    const res = await apps.kserve.inject({ method: 'POST', url: '/v2/models/tiny-embed/infer', headers: { 'content-type': 'application/json' }, payload });
    expect([res.statusCode, res.json().error]).toEqual([400, "Tensor 'text': element 0 is not valid Unicode: it holds a lone surrogate."]);
    const request = grpcTexts('tiny-embed', ['x']);
    (request as { inputs: { contents: { bytes_contents: Buffer[] } }[] }).inputs[0].contents.bytes_contents = [Buffer.from([0x61, 0xed, 0xa0, 0x80])];
    const err = (await apps.grpcInfer(request).then(() => undefined, (e: ServiceError) => e)) as ServiceError;
    expect(err.code).toBe(status.INVALID_ARGUMENT);
  });

  it('a surrogate pair is one character, and is embedded', async () => {
    expect((await raw('tei', '/embed', String.raw`{"inputs":"a\ud83d\ude00b"}`)).statusCode).toBe(200);
  });
});

describe("TEI's character bound (max_input_length × 250) comes before tokenizing, on every protocol", () => {
  // The fixtures take 32 tokens, so 8,000 characters.
  const BOUND = 32 * MAX_CHARACTERS_PER_TOKEN;
  const long = 'ab '.repeat(BOUND / 2);
  const refusal = new RegExp(`must have less than ${BOUND} characters. Given: ${long.length}`);

  /** The longest text the model's tokenizer was handed, spied on from now. */
  function tokenized(model: keyof TextProtocolApps['models']): () => number {
    const { tokenizer } = apps.models[model];
    const single = vi.spyOn(tokenizer, 'encode');
    const pair = vi.spyOn(tokenizer, 'encodePair');
    return () => Math.max(0, ...single.mock.calls.map(([text]) => text.length), ...pair.mock.calls.map(([a, b]) => Math.max(a.length, b.length)));
  }

  it('TEI /embed, /rerank, /predict: refused with truncate false, without tokenizing; cut to the bound with truncate true', async () => {
    const longest = tokenized('embed');
    expectTeiError(await post(apps.tei, '/embed', { inputs: long, truncate: false }), 422, 'Validation', refusal);
    expect(longest()).toBe(0);
    expect((await post(apps.tei, '/embed', { inputs: long, truncate: true })).statusCode).toBe(200);
    expect(longest()).toBe(BOUND);
    const pairs = tokenized('rerank');
    expectTeiError(await post(apps.tei, '/rerank', { query: long, texts: ['a'], truncate: false }), 422, 'Validation', /must have less than 8000 characters/);
    expect((await post(apps.tei, '/rerank', { query: long, texts: ['a'], truncate: true })).statusCode).toBe(200);
    // A pair over the bound is cut to half of it a text, as TEI's EncodingInput::Dual.
    expect(pairs()).toBe(BOUND / 2);
    expectTeiError(await post(apps.tei, '/predict', { inputs: [long, 'a'], truncate: false }), 422, 'Validation', /must have less than 8000 characters/);
  });

  it("keeps the text's end when truncating on the left", async () => {
    const { tokenizer } = apps.models.embed;
    const encode = vi.spyOn(tokenizer, 'encode');
    const text = `${'x'.repeat(BOUND)}tail`;
    expect((await post(apps.tei, '/embed', { inputs: text, truncate: true, truncation_direction: 'left' })).statusCode).toBe(200);
    expect(encode.mock.calls[0][0]).toBe(`${'x'.repeat(BOUND - 4)}tail`);
  });

  it('TEI /tokenize: refused, as TEI tokenizes without truncation', async () => {
    const longest = tokenized('embed');
    expectTeiError(await post(apps.tei, '/tokenize', { inputs: long, model: 'tiny-embed' }), 422, 'Validation', refusal);
    expect(longest()).toBe(0);
  });

  it('OpenAI /v1/embeddings (auto-truncate) cuts; Cohere /v2/embed truncate NONE refuses', async () => {
    const longest = tokenized('embed');
    expect((await post(apps.family, '/v1/embeddings', { input: long, model: 'tiny-embed' })).statusCode).toBe(200);
    expect(longest()).toBe(BOUND);
    const res = await post(apps.family, '/v2/embed', { texts: [long], truncate: 'NONE', model: 'tiny-embed' });
    expect([res.statusCode, res.json().error.message]).toEqual([400, expect.stringMatching(refusal)]);
  });

  it('KServe over HTTP and gRPC: refused with truncate false; cut otherwise', async () => {
    const longest = tokenized('embed');
    const refused = await kserveTexts(apps.kserve, 'tiny-embed', [long], { truncate: false });
    expect([refused.statusCode, refused.json().error]).toEqual([422, expect.stringMatching(refusal)]);
    const err = (await apps.grpcInfer(grpcTexts('tiny-embed', [long], { truncate: false })).then(() => undefined, (e: ServiceError) => e)) as ServiceError;
    expect([err.code, err.details]).toEqual([status.INVALID_ARGUMENT, expect.stringMatching(refusal)]);
    expect(longest()).toBe(0);
    expect((await kserveTexts(apps.kserve, 'tiny-embed', [long])).statusCode).toBe(200);
    await apps.grpcInfer(grpcTexts('tiny-embed', [long]));
    expect(longest()).toBe(BOUND);
  });
});
