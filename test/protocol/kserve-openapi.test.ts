import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { exampleInferRequest } from '../../src/protocol/kserve-openapi.js';
import { kserveProtocol } from '../../src/protocol/kserve-protocol.js';
import { registerOpenApi } from '../../src/server/openapi-plugin.js';
import { FakeModel, FakeRepository, identityModel, simpleModel } from './fake-repository.js';
import { postInfer } from './protocol-app.js';

const apps: ReturnType<typeof Fastify>[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

/** Registered in the server's order: OpenAPI first, so it sees the /v2 routes. */
async function documentedApp(repository: FakeRepository) {
  const app = Fastify();
  apps.push(app);
  await registerOpenApi(app, {}, { title: 't', version: '1' });
  await app.register(kserveProtocol, { repository, recorder: new InferenceRecorder({ collectProcessMetrics: false }), serverName: 's', serverVersion: '1', ready: () => true });
  await app.ready();
  return app;
}

type Operation = { tags: string[]; requestBody?: { content: Record<string, { schema: Record<string, unknown>; examples?: Record<string, { value: unknown }> }> }; responses: Record<string, unknown> };

describe('OpenAPI documentation of /v2', () => {
  it('documents every route under its OpenAPI path', async () => {
    const app = await documentedApp(new FakeRepository([simpleModel()]));
    const paths = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths as Record<string, Record<string, Operation>>;
    const v2 = Object.entries(paths)
      .filter(([p]) => p.startsWith('/v2'))
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    expect(v2).toEqual([
      'GET /v2',
      'GET /v2/health/live',
      'GET /v2/health/ready',
      'GET /v2/models/stats',
      'GET /v2/models/{model}',
      'GET /v2/models/{model}/config',
      'GET /v2/models/{model}/ready',
      'GET /v2/models/{model}/stats',
      'GET /v2/models/{model}/trace/setting',
      'GET /v2/models/{model}/versions/{version}',
      'GET /v2/models/{model}/versions/{version}/config',
      'GET /v2/models/{model}/versions/{version}/ready',
      'GET /v2/models/{model}/versions/{version}/stats',
      'GET /v2/systemsharedmemory/region/{region}/status',
      'GET /v2/systemsharedmemory/status',
      'GET /v2/trace/setting',
      'POST /v2/models/{model}/generate',
      'POST /v2/models/{model}/generate_stream',
      'POST /v2/models/{model}/infer',
      'POST /v2/models/{model}/trace/setting',
      'POST /v2/models/{model}/versions/{version}/generate',
      'POST /v2/models/{model}/versions/{version}/generate_stream',
      'POST /v2/models/{model}/versions/{version}/infer',
      'POST /v2/repository/index',
      'POST /v2/repository/models/{model}/load',
      'POST /v2/repository/models/{model}/unload',
      'POST /v2/systemsharedmemory/region/{region}/register',
      'POST /v2/systemsharedmemory/region/{region}/unregister',
      'POST /v2/systemsharedmemory/unregister',
      'POST /v2/trace/setting',
    ]);
    const infer = paths['/v2/models/{model}/infer'].post;
    expect(infer.tags).toEqual(['KServe v2 inference protocol']);
    expect(Object.keys(infer.requestBody!.content)).toEqual(['application/json', 'application/octet-stream']);
    expect(infer.responses['404']).toMatchObject({ content: { 'application/json': { schema: { properties: { error: { type: 'string' } } } } } });
  });

  it('describes each status with what it means on /v2 and an example body in the protocol\'s `{error}` shape', async () => {
    const app = await documentedApp(new FakeRepository([simpleModel()]));
    const paths = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths as Record<string, Record<string, Operation>>;
    const described = Object.values(paths).flatMap((ops) => Object.values(ops).flatMap((op) => Object.values(op.responses) as { description: string }[]));
    expect(described.map((r) => r.description)).not.toContain('Default Response');
    const infer = paths['/v2/models/{model}/infer'].post.responses as Record<string, { description: string; content: Record<string, { example: unknown }> }>;
    expect(Object.keys(infer)).toEqual(['200', '400', '404', '500', '503']);
    expect(infer['400'].description).toMatch(/^Bad Request: /);
    expect(infer['400'].content['application/json'].example).toEqual({ error: "Tensor 'INPUT0': expected shape [1,16], got [1,4]." });
    expect(infer['404'].content['application/json'].example).toEqual({ error: "Request for unknown model: 'my_model' is not found" });
    expect(infer['503'].content['application/json'].example).toEqual({ error: "Model 'my_model' version 1 is not ready" });
    // Server health answers with the status alone, as Triton does; liveness and metadata have no error to document.
    expect(paths['/v2/health/ready'].get.responses).toEqual({
      200: { description: 'Empty body' },
      400: { description: 'Not ready: a model in the repository is not ready, or the server is shutting down.' },
    });
    expect(Object.keys(paths['/v2/health/live'].get.responses)).toEqual(['200']);
    expect(Object.keys(paths['/v2'].get.responses)).toEqual(['200']);
  });

  it('gives the infer route one example per served model, and each example is a request the model answers', async () => {
    const odd = new FakeModel({
      name: 'odd',
      inputs: [
        { name: 'flags', datatype: 'BOOL', shape: [2, -1] },
        { name: 'text', datatype: 'BYTES', shape: [1] },
        { name: 'extra', datatype: 'FP32', shape: [1], optional: true },
      ],
      outputs: [{ name: 'flags_out', datatype: 'BOOL', shape: [2, -1] }],
      compute: (inputs) => [{ ...inputs.get('flags')!, name: 'flags_out' }],
    });
    const repository = new FakeRepository([simpleModel(), identityModel('UINT64', [3], 2), odd]);
    const app = await documentedApp(repository);
    const infer = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths['/v2/models/{model}/infer'].post as Operation;
    const examples = infer.requestBody!.content['application/json'].examples!;
    expect(Object.keys(examples)).toEqual(['simple_v1', 'identity_uint64_v1', 'odd_v1']);
    expect(examples.odd_v1).toEqual({
      summary: 'POST /v2/models/odd/versions/1/infer',
      value: {
        inputs: [
          { name: 'flags', shape: [2, 1], datatype: 'BOOL', data: [false, true] },
          { name: 'text', shape: [1], datatype: 'BYTES', data: ['0'] },
        ],
        outputs: [{ name: 'flags_out' }],
      },
    });
    expect(examples.identity_uint64_v1.value).toEqual({ inputs: [{ name: 'INPUT0', shape: [1, 3], datatype: 'UINT64', data: [0, 1, 2] }], outputs: [{ name: 'OUTPUT0' }] });
    for (const model of repository.models()) {
      const res = await postInfer(app, model.info.name, JSON.stringify(exampleInferRequest(model.info)));
      expect(res.statusCode, model.info.name).toBe(200);
    }
  });

  it('takes the examples from the models served when the document is first asked for', async () => {
    const repository = new FakeRepository([], { controlMode: 'explicit', unloaded: [simpleModel()] });
    const app = await documentedApp(repository);
    await repository.load('simple');
    const infer = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths['/v2/models/{model}/infer'].post as Operation;
    expect(infer.requestBody!.content['application/json'].examples).toMatchObject({ simple_v1: { summary: 'POST /v2/models/simple/versions/1/infer' } });
  });
});
