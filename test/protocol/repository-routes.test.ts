import { describe, expect, it } from 'vitest';
import { FakeRepository, identityModel, simpleModel, versionedModel } from './fake-repository.js';
import { protocolApp } from './protocol-app.js';

function post(app: Awaited<ReturnType<typeof protocolApp>>['app'], url: string, payload?: string) {
  return app.inject({ method: 'POST', url, ...(payload === undefined ? {} : { headers: { 'content-type': 'application/json' }, payload }) });
}

describe('POST /v2/repository/index', () => {
  it('lists every model with its state, and only ready ones with {"ready": true}', async () => {
    const v1 = versionedModel('1');
    v1.isReady = false;
    const repository = new FakeRepository([simpleModel(), v1], { controlMode: 'explicit', unloaded: [identityModel('FP32')] });
    const { app } = await protocolApp(repository);
    const all = await post(app, '/v2/repository/index');
    expect(all.statusCode).toBe(200);
    expect(all.body).toBe(
      '[{"name":"identity_fp32","version":"1","state":"UNAVAILABLE","reason":"unloaded"},' +
        '{"name":"simple","version":"1","state":"READY"},{"name":"versioned","version":"1","state":"UNAVAILABLE"}]',
    );
    expect((await post(app, '/v2/repository/index', '{"ready":true}')).json()).toEqual([{ name: 'simple', version: '1', state: 'READY' }]);
    expect((await post(app, '/v2/repository/index', '{}')).json()).toHaveLength(3);
  });

  it('answers in every control mode', async () => {
    for (const controlMode of ['none', 'poll', 'explicit'] as const) {
      const { app } = await protocolApp(new FakeRepository([simpleModel()], { controlMode }));
      expect((await post(app, '/v2/repository/index')).statusCode, controlMode).toBe(200);
    }
  });

  it("400 for a 'ready' that is not a boolean, or a body that is not JSON", async () => {
    const { app } = await protocolApp(new FakeRepository([]));
    const a = await post(app, '/v2/repository/index', '{"ready":"yes"}');
    expect([a.statusCode, a.body]).toEqual([400, `{"error":"Invalid value for 'ready': expected a boolean","code":"SF_ERR_BAD_REQUEST"}`]);
    const b = await post(app, '/v2/repository/index', '{nope');
    expect(b.statusCode).toBe(400);
    expect(b.json().error).toMatch(/^Request body is not valid JSON: /);
  });
});

describe('nesting limit', () => {
  const deep = (open: string, close: string): string => open.repeat(10_000) + close.repeat(10_000);

  it('answers a body nested 10,000 levels deep 400 SF_ERR_BODY_TOO_DEEP on every repository route, and keeps serving', async () => {
    const repository = new FakeRepository([simpleModel()], { controlMode: 'explicit', unloaded: [identityModel('FP32')] });
    const { app } = await protocolApp(repository);
    for (const [url, body] of [
      ['/v2/repository/index', `{"ready":${deep('[', ']')}}`],
      ['/v2/repository/index', deep('[', ']')],
      ['/v2/repository/models/identity_fp32/load', `{"parameters":${deep('{"a":', '}').replace(/\{"a":\}/, '{}')}}`],
      ['/v2/repository/models/simple/unload', `{"parameters":{"unload_dependents":${deep('[', ']')}}}`],
    ]) {
      const res = await post(app, url!, body);
      expect([url, res.statusCode, res.json()]).toEqual([url, 400, { error: 'Request body nests arrays and objects deeper than 128 levels.', code: 'SF_ERR_BODY_TOO_DEEP' }]);
    }
    expect(repository.loads).toEqual([]);
    expect((await post(app, '/v2/repository/index')).statusCode).toBe(200);
  });
});

describe('load and unload in explicit mode', () => {
  it('loads an unloaded model, which then serves, and unloads it again', async () => {
    const repository = new FakeRepository([], { controlMode: 'explicit', unloaded: [simpleModel()] });
    const { app } = await protocolApp(repository);
    expect((await app.inject({ method: 'GET', url: '/v2/models/simple/ready' })).statusCode).toBe(404);

    const load = await post(app, '/v2/repository/models/simple/load');
    expect([load.statusCode, load.body]).toEqual([200, '']);
    expect(repository.loads).toEqual([{ name: 'simple', request: {} }]);
    expect((await app.inject({ method: 'GET', url: '/v2/models/simple/ready' })).statusCode).toBe(200);

    const unload = await post(app, '/v2/repository/models/simple/unload', '{"parameters":{"unload_dependents":false}}');
    expect([unload.statusCode, unload.body]).toEqual([200, '']);
    expect((await app.inject({ method: 'GET', url: '/v2/models/simple' })).statusCode).toBe(404);
  });

  it('passes a config override and base64 files, decoded to bytes', async () => {
    const repository = new FakeRepository([], { controlMode: 'explicit', unloaded: [simpleModel()] });
    const { app } = await protocolApp(repository);
    const config = '{"max_batch_size":4}';
    const body = JSON.stringify({ parameters: { config, 'file:1/model.onnx': 'AAEC/w==', 'file:1/labels.txt': 'aGk=' } });
    expect((await post(app, '/v2/repository/models/simple/load', body)).statusCode).toBe(200);
    expect(repository.loads[0]).toEqual({
      name: 'simple',
      request: { config, files: { 'file:1/model.onnx': new Uint8Array([0, 1, 2, 255]), 'file:1/labels.txt': new Uint8Array([0x68, 0x69]) } },
    });
  });

  it('decodes a 20 MiB file, and refuses one damaged at its end, without overflowing the stack', async () => {
    const repository = new FakeRepository([], { controlMode: 'explicit', unloaded: [simpleModel()] });
    const { app } = await protocolApp(repository, { bodyLimit: 64 * 1024 * 1024 });
    const model = Buffer.alloc(20 * 1024 * 1024);
    for (let i = 0; i < model.length; i++) model[i] = (i * 31) & 0xff;
    const encoded = model.toString('base64');
    const body = (file: string): string => JSON.stringify({ parameters: { config: '{}', 'file:1/model.onnx': file } });
    const res = await post(app, '/v2/repository/models/simple/load', body(encoded));
    expect([res.statusCode, res.body]).toEqual([200, '']);
    expect(Buffer.from(repository.loads[0].request!.files!['file:1/model.onnx']).equals(model)).toBe(true);
    const damaged = await post(app, '/v2/repository/models/simple/load', body(`${encoded.slice(0, -4)}A!A=`));
    expect([damaged.statusCode, damaged.json().error]).toEqual([400, "Parameter 'file:1/model.onnx' is not valid base64."]);
    expect(repository.loads).toHaveLength(1);
  });

  it('400 for load parameters that are not strings, not base64, or not known', async () => {
    const repository = new FakeRepository([], { controlMode: 'explicit', unloaded: [simpleModel()] });
    const { app } = await protocolApp(repository);
    const cases: [string, string][] = [
      ['{"parameters":{"config":{"max_batch_size":4}}}', `Unable to parse 'config': expected a string, got {"max_batch_size":4}.`],
      ['{"parameters":{"file:1/model.onnx":"not base64!"}}', "Parameter 'file:1/model.onnx' is not valid base64."],
      ['{"parameters":{"file:1/model.onnx":"AAEC/w"}}', "Parameter 'file:1/model.onnx' is not valid base64."],
      ['{"parameters":{"file:1/model.onnx":"AA EC"}}', "Parameter 'file:1/model.onnx' is not valid base64."],
      ['{"parameters":{"colour":"blue"}}', "Unexpected load parameter 'colour': use 'config' or 'file:<version>/<file name>'."],
      ['{"parameters":"config"}', `Unable to parse 'parameters': expected an object, got "config".`],
    ];
    for (const [body, message] of cases) {
      const res = await post(app, '/v2/repository/models/simple/load', body);
      expect([res.statusCode, res.json().error], body).toEqual([400, message]);
    }
    expect(repository.loads).toEqual([]);
  });

  it("passes the repository's errors through: unknown model 404", async () => {
    const { app } = await protocolApp(new FakeRepository([], { controlMode: 'explicit' }));
    const res = await post(app, '/v2/repository/models/ghost/load');
    expect([res.statusCode, res.body]).toEqual([404, `{"error":"Request for unknown model: 'ghost' is not found","code":"SF_ERR_MODEL_UNKNOWN"}`]);
  });

  it('refuses unload_dependents: true as unsupported (501), and a non-boolean as 400', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()], { controlMode: 'explicit' }));
    const a = await post(app, '/v2/repository/models/simple/unload', '{"parameters":{"unload_dependents":true}}');
    expect([a.statusCode, a.json().error]).toEqual([501, "'unload_dependents' is not supported: unload the dependent models one by one"]);
    const b = await post(app, '/v2/repository/models/simple/unload', '{"parameters":{"unload_dependents":"yes"}}');
    expect([b.statusCode, b.json().error]).toEqual([400, `Unable to parse 'unload_dependents': expected a boolean, got "yes".`]);
    expect((await app.inject({ method: 'GET', url: '/v2/models/simple/ready' })).statusCode).toBe(200);
  });
});

describe('load and unload outside explicit mode', () => {
  for (const controlMode of ['none', 'poll'] as const) {
    it(`answers 503 with Triton's message in ${controlMode} mode and changes nothing`, async () => {
      const repository = new FakeRepository([simpleModel()], { controlMode, unloaded: [identityModel('FP32')] });
      const { app } = await protocolApp(repository);
      for (const url of ['/v2/repository/models/identity_fp32/load', '/v2/repository/models/simple/unload']) {
        const res = await post(app, url);
        expect([res.statusCode, res.body], url).toEqual([503, '{"error":"explicit model load / unload is not allowed if polling is enabled","code":"SF_ERR_MODEL_CONTROL_DISABLED"}']);
      }
      expect(repository.loads).toEqual([]);
      expect(repository.models().map((m) => m.info.name)).toEqual(['simple']);
    });
  }
});
