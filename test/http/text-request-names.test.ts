import { status, type ServiceError } from '@grpc/grpc-js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectTeiError, post } from '../helpers/tei-app.js';
import { grpcTexts, kserveTexts, textProtocolApps, type TextProtocolApps } from '../helpers/text-protocol-apps.js';

/**
 * Every field whose value a text route looks up by name (a prompt, a truncation spelling, an
 * encoding), given the names every JS object inherits: each is refused in its protocol's shape,
 * never taken as a member of Object.prototype.
 */
const INHERITED_NAMES = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'] as const;

let apps: TextProtocolApps;
beforeAll(async () => {
  apps = await textProtocolApps();
});
afterAll(() => apps.close());

function expectFamilyError(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(Object.keys(res.json())).toEqual(['error']);
}

/** Each field, how a request carries `name` in it, and the protocol's refusal. */
const FIELDS: readonly (readonly [string, (name: string) => Promise<void>])[] = [
  ...['/embed', '/embed_all', '/embed_sparse'].map((url) => [`TEI ${url} prompt_name`, async (name: string) => {
    expectTeiError(await post(apps.tei, url, { inputs: 'hello', prompt_name: name }), 422, 'Validation');
  }] as const),
  ['TEI /tokenize prompt_name', async (name) => expectTeiError(await post(apps.tei, '/tokenize', { inputs: 'hello', prompt_name: name, model: 'tiny-embed' }), 422, 'Validation')],
  ['TEI /similarity parameters.prompt_name', async (name) => {
    expectTeiError(await post(apps.tei, '/similarity', { inputs: { source_sentence: 'a', sentences: ['b'] }, parameters: { prompt_name: name } }), 422, 'Validation');
  }],
  ['TEI /embed truncation_direction', async (name) => expectTeiError(await post(apps.tei, '/embed', { inputs: 'hello', truncation_direction: name }), 422, 'Validation')],
  ['OpenAI /v1/embeddings encoding_format', async (name) => expectFamilyError(await post(apps.family, '/v1/embeddings', { input: 'hello', encoding_format: name, model: 'tiny-embed' }))],
  ['Cohere /v2/embed input_type', async (name) => expectFamilyError(await post(apps.family, '/v2/embed', { texts: ['hello'], input_type: name, model: 'tiny-embed' }))],
  ['Cohere /v2/embed truncate', async (name) => expectFamilyError(await post(apps.family, '/v2/embed', { texts: ['hello'], truncate: name, model: 'tiny-embed' }))],
  // An unknown prompt is the engine's validation error (422, as on every text route); a bad spelling the parameter reader's 400.
  ...([['prompt_name', 422], ['truncation_direction', 400]] as const).map(([parameter, code]) => [`KServe HTTP parameter ${parameter}`, async (name: string) => {
    const res = await kserveTexts(apps.kserve, 'tiny-embed', ['hello'], { [parameter]: name });
    expect(res.statusCode, res.body).toBe(code);
    expect(res.json()).toMatchObject({ error: expect.stringContaining(parameter) });
  }] as const),
  ...['prompt_name', 'truncation_direction'].map((parameter) => [`KServe gRPC parameter ${parameter}`, async (name: string) => {
    const err = (await apps.grpcInfer(grpcTexts('tiny-embed', ['hello'], { [parameter]: name })).then(() => undefined, (e: ServiceError) => e)) as ServiceError | undefined;
    expect(err?.code, err?.details).toBe(status.INVALID_ARGUMENT);
  }] as const),
];

describe('request-named keys are own keys only', () => {
  it.each(FIELDS.flatMap(([field, send]) => INHERITED_NAMES.map((name) => [field, name, send] as const)))('%s = %j is refused', async (_field, name, send) => {
    await send(name);
  });
});
