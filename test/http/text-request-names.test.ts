import { credentials, loadPackageDefinition, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { kserveProtocol } from '../../src/protocol/kserve-protocol.js';
import { cohereVllmRoutes } from '../../src/protocol/cohere-vllm/cohere-vllm-routes.js';
import { GRPC_PROTO_PATH, startGrpcServer, type GrpcServerHandle } from '../../src/protocol/grpc/grpc-server.js';
import { openAiRoutes } from '../../src/protocol/openai/openai-routes.js';
import { installJsonBodyParser, DEFAULT_JSON_BODY_LIMIT } from '../../src/server/json-body-parser.js';
import { TextInferenceModel } from '../../src/text/text-inference-model.js';
import { FakeRepository, type FakeModel } from '../protocol/fake-repository.js';
import { expectTeiError, post, teiApp } from '../helpers/tei-app.js';
import { textModelFor, textModelSetOf } from '../helpers/text-model-fixture.js';

/**
 * Every field whose value a text route looks up by name (a prompt, a truncation spelling, an
 * encoding), given the names every JS object inherits: each is refused in its protocol's shape,
 * never taken as a member of Object.prototype.
 */
const INHERITED_NAMES = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'] as const;

let tei: FastifyInstance;
let family: FastifyInstance;
let kserve: FastifyInstance;
let grpc: GrpcServerHandle;
let grpcClient: InstanceType<ServiceClientConstructor>;
let grpcInfer: (request: object) => Promise<unknown>;

beforeAll(async () => {
  const embedder = await textModelFor('embed');
  const splade = await textModelFor('sparse');
  tei = await teiApp([embedder, splade]);
  family = Fastify();
  installJsonBodyParser(family, DEFAULT_JSON_BODY_LIMIT);
  await family.register(openAiRoutes, { models: textModelSetOf([embedder]) });
  await family.register(cohereVllmRoutes, { models: textModelSetOf([embedder]) });
  await family.ready();
  const repository = new FakeRepository([new TextInferenceModel(embedder, '1') as unknown as FakeModel]);
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  kserve = Fastify();
  await kserve.register(kserveProtocol, { repository, recorder, serverName: 'serve-fn', serverVersion: '0.1.0', ready: () => true });
  await kserve.ready();
  grpc = await startGrpcServer({
    repository, serverName: 'serve-fn', serverVersion: '0.1.0', recorder, ready: () => true, port: 0, host: '127.0.0.1',
  });
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false }));
  const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  grpcClient = new Service(`127.0.0.1:${grpc.port}`, credentials.createInsecure());
  grpcInfer = (request) => new Promise((resolve, reject) => grpcClient.ModelInfer(request, (err: ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))));
});

afterAll(async () => {
  grpcClient.close();
  await Promise.all([tei.close(), family.close(), kserve.close(), grpc.close(100)]);
});

const kserveBody = (parameters: object) => JSON.stringify({ inputs: [{ name: 'text', datatype: 'BYTES', shape: [1], data: ['hello'] }], parameters });

/** Each field, how a request carries `name` in it, and the protocol's refusal. */
const FIELDS: readonly (readonly [string, (name: string) => Promise<void>])[] = [
  ...['/embed', '/embed_all', '/embed_sparse'].map((url) => [`TEI ${url} prompt_name`, async (name: string) => {
    expectTeiError(await post(tei, url, { inputs: 'hello', prompt_name: name, model: url === '/embed_sparse' ? 'tiny-sparse' : 'tiny-embed' }), 422, 'Validation');
  }] as const),
  ['TEI /tokenize prompt_name', async (name) => expectTeiError(await post(tei, '/tokenize', { inputs: 'hello', prompt_name: name, model: 'tiny-embed' }), 422, 'Validation')],
  ['TEI /similarity parameters.prompt_name', async (name) => {
    expectTeiError(await post(tei, '/similarity', { inputs: { source_sentence: 'a', sentences: ['b'] }, parameters: { prompt_name: name } }), 422, 'Validation');
  }],
  ['TEI /embed truncation_direction', async (name) => expectTeiError(await post(tei, '/embed', { inputs: 'hello', truncation_direction: name, model: 'tiny-embed' }), 422, 'Validation')],
  ['OpenAI /v1/embeddings encoding_format', async (name) => expectFamilyError(await post(family, '/v1/embeddings', { input: 'hello', encoding_format: name }))],
  ['Cohere /v2/embed input_type', async (name) => expectFamilyError(await post(family, '/v2/embed', { texts: ['hello'], input_type: name }))],
  ['Cohere /v2/embed truncate', async (name) => expectFamilyError(await post(family, '/v2/embed', { texts: ['hello'], truncate: name }))],
  // An unknown prompt is the engine's validation error (422, as on every text route); a bad spelling the parameter reader's 400.
  ...([['prompt_name', 422], ['truncation_direction', 400]] as const).map(([parameter, code]) => [`KServe HTTP parameter ${parameter}`, async (name: string) => {
    const res = await kserve.inject({ method: 'POST', url: '/v2/models/tiny-embed/infer', headers: { 'content-type': 'application/json' }, payload: kserveBody({ [parameter]: name }) });
    expect(res.statusCode, res.body).toBe(code);
    expect(res.json()).toMatchObject({ error: expect.stringContaining(parameter) });
  }] as const),
  ...['prompt_name', 'truncation_direction'].map((parameter) => [`KServe gRPC parameter ${parameter}`, async (name: string) => {
    const request = {
      model_name: 'tiny-embed',
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('hello')] } }],
      parameters: { [parameter]: { string_param: name } },
    };
    const err = (await grpcInfer(request).then(() => undefined, (e: ServiceError) => e)) as ServiceError | undefined;
    expect(err?.code, err?.details).toBe(status.INVALID_ARGUMENT);
  }] as const),
];

function expectFamilyError(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(Object.keys(res.json())).toEqual(['error']);
}

describe('request-named keys are own keys only', () => {
  it.each(FIELDS.flatMap(([field, send]) => INHERITED_NAMES.map((name) => [field, name, send] as const)))('%s = %j is refused', async (_field, name, send) => {
    await send(name);
  });
});
