import { describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { FakeRepository, identityModel, simpleModel, versionedModel } from './fake-repository.js';
import { postInfer, protocolApp, wire } from './protocol-app.js';

/** fastify's type for serialized objects; errors and infer answers use Triton's bare `application/json`. */
const json = 'application/json; charset=utf-8';
const bareJson = 'application/json';

describe('GET /v2 (server metadata)', () => {
  it('answers name, version and the implemented extensions (system_shared_memory where the addon is built) at /v2 (not /v2/, as Triton)', async () => {
    const { app } = await protocolApp(new FakeRepository([]));
    const res = await app.inject({ method: 'GET', url: '/v2' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(
      '{"name":"serve-fn","version":"0.1.0","extensions":["binary_tensor_data","model_configuration","model_repository","statistics","schedule_policy","parameters","sequence","trace","system_shared_memory"]}',
    );
    expect((await app.inject({ method: 'GET', url: '/v2/' })).statusCode).toBe(404);
  });
});

describe('health', () => {
  it('live is 200 with an empty body', async () => {
    const { app } = await protocolApp(new FakeRepository([]));
    const res = await app.inject({ method: 'GET', url: '/v2/health/live' });
    expect([res.statusCode, res.body]).toEqual([200, '']);
  });

  it('ready is 200 only while the server serves and every model is ready, 400 with no body otherwise', async () => {
    const simple = simpleModel();
    const handle = await protocolApp(new FakeRepository([simple, identityModel('FP32')]));
    const ready = async (): Promise<[number, string]> => {
      const res = await handle.app.inject({ method: 'GET', url: '/v2/health/ready' });
      return [res.statusCode, res.body];
    };
    expect(await ready()).toEqual([200, '']);
    simple.isReady = false;
    expect(await ready()).toEqual([400, '']);
    simple.isReady = true;
    handle.serving = false;
    expect(await ready()).toEqual([400, '']);
  });
});

describe('model metadata', () => {
  it("describes `simple` as Triton does: batch dimension -1, every version", async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await app.inject({ method: 'GET', url: '/v2/models/simple' });
    expect(wire(res)).toEqual({
      status: 200,
      type: json,
      body:
        '{"name":"simple","versions":["1"],"platform":"tensorflow_graphdef",' +
        '"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]},{"name":"INPUT1","datatype":"INT32","shape":[-1,16]}],' +
        '"outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[-1,16]},{"name":"OUTPUT1","datatype":"INT32","shape":[-1,16]}]}',
    });
  });

  it('keeps shapes as declared for a model without batching', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('FP16', [2, -1])]));
    const res = await app.inject({ method: 'GET', url: '/v2/models/identity_fp16' });
    expect(res.json()).toEqual({
      name: 'identity_fp16',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'INPUT0', datatype: 'FP16', shape: [2, -1] }],
      outputs: [{ name: 'OUTPUT0', datatype: 'FP16', shape: [2, -1] }],
    });
  });

  it('lists all versions without /versions and only the asked one with it', async () => {
    const { app } = await protocolApp(new FakeRepository([versionedModel('1'), versionedModel('2')]));
    expect((await app.inject({ method: 'GET', url: '/v2/models/versioned' })).json().versions).toEqual(['1', '2']);
    expect((await app.inject({ method: 'GET', url: '/v2/models/versioned/versions/1' })).json().versions).toEqual(['1']);
  });

  it("answers an unknown model or version 404 with Triton's message and the catalogue code", async () => {
    const { app } = await protocolApp(new FakeRepository([versionedModel('1')]));
    expect(wire(await app.inject({ method: 'GET', url: '/v2/models/nope' }))).toEqual({
      status: 404,
      type: bareJson,
      body: `{"error":"Request for unknown model: 'nope' is not found","code":"SF_ERR_MODEL_UNKNOWN"}`,
    });
    expect(wire(await app.inject({ method: 'GET', url: '/v2/models/versioned/versions/7' }))).toEqual({
      status: 404,
      type: bareJson,
      body: `{"error":"Request for unknown model: 'versioned' version 7 is not found","code":"SF_ERR_MODEL_VERSION_UNKNOWN"}`,
    });
  });

  it('treats a version that is not an integer as no route at all', async () => {
    const { app } = await protocolApp(new FakeRepository([versionedModel('1')]));
    const res = await app.inject({ method: 'GET', url: '/v2/models/versioned/versions/latest' });
    expect([res.statusCode, res.body]).toEqual([404, '{"error":"Not Found","code":"SF_ERR_NOT_FOUND"}']);
  });
});

describe('model ready', () => {
  it('is 200 with no body when ready, 400 "Model version not ready" when not, 404 when unknown', async () => {
    const v1 = versionedModel('1');
    const v2 = versionedModel('2');
    const { app } = await protocolApp(new FakeRepository([v1, v2]));
    const get = async (url: string): Promise<[number, string]> => {
      const res = await app.inject({ method: 'GET', url });
      return [res.statusCode, res.body];
    };
    expect(await get('/v2/models/versioned/ready')).toEqual([200, '']);
    v1.isReady = false;
    expect(await get('/v2/models/versioned/versions/1/ready')).toEqual([400, '{"error":"Model version not ready","code":"SF_ERR_BAD_REQUEST"}']);
    expect(await get('/v2/models/versioned/versions/2/ready')).toEqual([200, '']);
    expect(await get('/v2/models/other/ready')).toEqual([404, `{"error":"Request for unknown model: 'other' is not found","code":"SF_ERR_MODEL_UNKNOWN"}`]);
  });
});

describe('model config', () => {
  it("serves the model's configuration JSON as given, per version", async () => {
    const simple = simpleModel();
    const { app } = await protocolApp(new FakeRepository([simple]));
    const res = await app.inject({ method: 'GET', url: '/v2/models/simple/versions/1/config' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(simple.info.config);
    expect(res.json()).toMatchObject({ name: 'simple', max_batch_size: 8, input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }, { name: 'INPUT1' }] });
  });
});

describe('statistics', () => {
  const zero = { count: 0, ns: 0 };
  const zeroStats = (name: string, version: string): unknown => ({
    name,
    version,
    last_inference: 0,
    inference_count: 0,
    execution_count: 0,
    inference_stats: { success: zero, fail: zero, queue: zero, compute_input: zero, compute_infer: zero, compute_output: zero, cache_hit: zero, cache_miss: zero },
    response_stats: {},
    batch_stats: [],
    memory_usage: [],
  });

  it('lists every served model with zeros before any inference', async () => {
    const { app } = await protocolApp(new FakeRepository([versionedModel('1'), versionedModel('2'), identityModel('BOOL')]));
    const res = await app.inject({ method: 'GET', url: '/v2/models/stats' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ model_stats: [zeroStats('identity_bool', '1'), zeroStats('versioned', '1'), zeroStats('versioned', '2')] });
  });

  it("counts an inference in Triton's shape, per model and per version", async () => {
    const recorder = new InferenceRecorder({ collectProcessMetrics: false, now: () => 1_700_000_000_123 });
    const { app } = await protocolApp(new FakeRepository([simpleModel(recorder), versionedModel('3')]), { recorder });
    const body = `{"inputs":[{"name":"INPUT0","shape":[2,16],"datatype":"INT32","data":${JSON.stringify(Array(32).fill(1))}},` +
      `{"name":"INPUT1","shape":[2,16],"datatype":"INT32","data":${JSON.stringify(Array(32).fill(2))}}]}`;
    expect((await postInfer(app, 'simple', body)).statusCode).toBe(200);

    const res = await app.inject({ method: 'GET', url: '/v2/models/simple/versions/1/stats' });
    expect(res.json()).toEqual({
      model_stats: [
        {
          name: 'simple',
          version: '1',
          last_inference: 1_700_000_000_123,
          inference_count: 2,
          execution_count: 1,
          inference_stats: {
            success: { count: 1, ns: 10_000 },
            fail: zero,
            queue: { count: 1, ns: 4_000 },
            compute_input: { count: 1, ns: 1_000 },
            compute_infer: { count: 1, ns: 2_000 },
            compute_output: { count: 1, ns: 3_000 },
            cache_hit: zero,
            cache_miss: zero,
          },
          response_stats: {},
          batch_stats: [{ batch_size: 2, compute_input: { count: 1, ns: 1_000 }, compute_infer: { count: 1, ns: 2_000 }, compute_output: { count: 1, ns: 3_000 } }],
          memory_usage: [],
        },
      ],
    });
    expect((await app.inject({ method: 'GET', url: '/v2/models/versioned/stats' })).json()).toEqual({ model_stats: [zeroStats('versioned', '3')] });
    expect((await app.inject({ method: 'GET', url: '/v2/models/stats' })).json().model_stats.map((s: { name: string }) => s.name)).toEqual(['simple', 'versioned']);
  });

  it('answers 404 for statistics of an unknown model or version', async () => {
    const { app } = await protocolApp(new FakeRepository([versionedModel('1')]));
    const a = await app.inject({ method: 'GET', url: '/v2/models/ghost/stats' });
    expect([a.statusCode, a.body]).toEqual([404, `{"error":"Request for unknown model: 'ghost' is not found","code":"SF_ERR_MODEL_UNKNOWN"}`]);
    const b = await app.inject({ method: 'GET', url: '/v2/models/versioned/versions/9/stats' });
    expect([b.statusCode, b.body]).toEqual([404, `{"error":"Request for unknown model: 'versioned' version 9 is not found","code":"SF_ERR_MODEL_VERSION_UNKNOWN"}`]);
  });
});

describe('routing', () => {
  it('answers an unknown /v2 route 404 {"error":"Not Found","code":"SF_ERR_NOT_FOUND"}', async () => {
    const { app } = await protocolApp(new FakeRepository([]));
    for (const url of ['/v2/nothing', '/v2/models/simple/explain', '/v2/health/dead']) {
      const res = await app.inject({ method: 'GET', url });
      expect(wire(res), url).toEqual({ status: 404, type: bareJson, body: '{"error":"Not Found","code":"SF_ERR_NOT_FOUND"}' });
    }
  });

  it('answers a served path with the wrong method 405 "Method Not Allowed" and the methods it takes in Allow, as Triton does', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const cases: [string, string, string][] = [
      ['POST', '/v2/health/live', 'GET, HEAD'],
      ['GET', '/v2/models/simple/infer', 'POST'],
      ['GET', '/v2/models/simple/generate', 'POST'],
      ['GET', '/v2/models/simple/versions/1/generate_stream', 'POST'],
      ['DELETE', '/v2/models/simple', 'GET, HEAD'],
      ['GET', '/v2/repository/index', 'POST'],
      ['GET', '/v2/repository/models/simple/load', 'POST'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await app.inject({ method: method as 'GET', url });
      expect([res.statusCode, res.body, res.headers.allow], `${method} ${url}`).toEqual([405, '{"error":"Method Not Allowed","code":"SF_ERR_METHOD_NOT_ALLOWED"}', allow]);
    }
  });

  it("leaves the user's routes outside /v2 to serve-fn's own JSON parsing and error shape", async () => {
    const { app } = await protocolApp(new FakeRepository([]));
    const ok = await app.inject({ method: 'POST', url: '/user/echo', headers: { 'content-type': 'application/json' }, payload: '{"a":1}' });
    expect(ok.json()).toEqual({ got: { a: 1 } });
    const missing = await app.inject({ method: 'GET', url: '/elsewhere' });
    expect(missing.json()).toEqual({ error: 'Not Found', code: 'SF_ERR_NOT_FOUND' });
    const bad = await app.inject({ method: 'POST', url: '/user/echo', headers: { 'content-type': 'application/json' }, payload: '{' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].type).toBe('json_invalid');
  });
});
