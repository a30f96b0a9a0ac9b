import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { BrittleModel, FragileModel } from '../fixtures/models/fragile-model.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';

/** No restart within the test: the first crash of an instance is past its limit. */
const NO_RESTARTS = { maxRestarts: 0, windowMs: 600_000 };
const UNAVAILABLE = /^Model '(fragile|scale)' has no running instance: every instance crashed past its restart limit\. The next restart is in \d+ ms\.$/;

async function call(server: ServeFnServer, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<{ status: number; body: any }> {
  const res = await server.app.inject({ method, url, payload: payload as object });
  return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
}

async function metric(server: ServeFnServer, prefix: string): Promise<number> {
  const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? NaN : Number(line.split(' ').at(-1));
}

describe('a decorated model whose instances crash past the restart limit', () => {
  const server = new ServeFnServer({
    models: [FragileModel],
    moduleUrl: new URL('../fixtures/models/fragile-model.ts', import.meta.url).href,
    restartPolicy: NO_RESTARTS,
    // The test reads which instance crashed from the 500's message, which production hides.
    exposeErrors: true,
    logger: false,
    collectProcessMetrics: false,
  });
  afterAll(() => server.close());

  it('keeps serving from the instance still up, then fails queued and new requests fast with 503 and turns not ready', async () => {
    await server.start();
    const crashed = await call(server, 'POST', '/die', { ms: 0 });
    expect(crashed).toMatchObject({ status: 500, body: { code: 'SF_ERR_INSTANCE_CRASHED' } });
    const lost = Number(/instance (\d)/.exec(crashed.body.error)![1]);

    // One instance is left: requests go to it and the server stays ready.
    expect(await call(server, 'GET', '/health/ready')).toEqual({ status: 200, body: { status: 'ready' } });
    const served = await Promise.all([0, 1, 2].map(() => call(server, 'POST', '/work', { ms: 0 })));
    expect(served).toEqual([0, 1, 2].map(() => ({ status: 200, body: { instance: 1 - lost } })));

    // The last instance holds a request, two more wait in the queue behind it, then it dies.
    const dying = call(server, 'POST', '/die', { ms: 1_500 });
    const queued = [call(server, 'POST', '/work', { ms: 0 }), call(server, 'POST', '/work', { ms: 0 })];
    await expect.poll(() => metric(server, 'nv_inference_pending_request_count{model="fragile"'), { timeout: 1_000, interval: 10 }).toBe(2);
    expect((await dying).body.code).toBe('SF_ERR_INSTANCE_CRASHED');
    for (const answer of await Promise.all(queued)) {
      expect(answer.status).toBe(503);
      expect(answer.body).toEqual({ error: expect.stringMatching(UNAVAILABLE), code: 'SF_ERR_MODEL_UNAVAILABLE' });
    }

    const fresh = await call(server, 'POST', '/work', { ms: 0 });
    expect(fresh).toMatchObject({ status: 503, body: { code: 'SF_ERR_MODEL_UNAVAILABLE' } });
    expect(await call(server, 'GET', '/health/ready')).toEqual({
      status: 503,
      body: { error: "Server is not ready: model 'fragile' version 1 has no running instance.", code: 'SF_ERR_NOT_READY' },
    });
    expect((await call(server, 'GET', '/v2/health/ready')).status).toBe(400);
    expect(await metric(server, 'nv_inference_pending_request_count{model="fragile"')).toBe(0);
    expect(await metric(server, 'nv_inference_request_failure{model="fragile",version="1",reason="REJECTED"}')).toBe(3);
  });
});

describe('a repository model whose only instance crashes past the restart limit', () => {
  const root = scratchFolder('restart-limit');
  const scaleModel = new URL('../fixtures/repository/scale-model.ts', import.meta.url).href;
  writeFiles(root, {
    'scale/config.pbtxt': `backend: "serve-fn"
      max_batch_size: 8
      input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] } ]
      output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 2 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]
      instance_group [ { count: 1 kind: KIND_CPU } ]`,
    'scale/1/model.ts': `export { default } from '${scaleModel}';\n`,
  });
  const server = new ServeFnServer({ models: [], repository: { root }, restartPolicy: NO_RESTARTS, exposeErrors: true, logger: false, collectProcessMetrics: false });
  afterAll(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });
  const infer = (parameters: Record<string, string>) =>
    call(server, 'POST', '/v2/models/scale/infer', { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: [1, 2] }], parameters });

  it('turns the model not ready and answers its infer requests 503 in the KServe error shape', async () => {
    await server.start();
    expect((await infer({})).status).toBe(200);
    expect((await infer({ fail: 'exit' })).body.error).toMatch(/^Model 'scale' instance 0 stopped while running this request/);

    expect(await call(server, 'GET', '/v2/models/scale/ready')).toEqual({ status: 400, body: { error: 'Model version not ready', code: 'SF_ERR_BAD_REQUEST' } });
    expect(await infer({})).toEqual({ status: 503, body: { error: "Model 'scale' version 1 is not ready", code: 'SF_ERR_MODEL_NOT_READY' } });
    expect((await call(server, 'GET', '/v2/health/ready')).status).toBe(400);
    expect(await call(server, 'GET', '/health/ready')).toEqual({
      status: 503,
      body: { error: "Server is not ready: model 'scale' version 1 is not ready.", code: 'SF_ERR_NOT_READY' },
    });
    expect(await server.repository!.index()).toEqual([{ name: 'scale', version: '1', state: 'UNAVAILABLE' }]);
  });
});

describe("a repository model's restart_limit parameter", () => {
  const root = scratchFolder('restart-limit-parameter');
  const scaleModel = new URL('../fixtures/repository/scale-model.ts', import.meta.url).href;
  writeFiles(root, {
    'scale/config.pbtxt': `backend: "serve-fn"
      max_batch_size: 8
      input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] } ]
      output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 2 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]
      instance_group [ { count: 1 kind: KIND_CPU } ]
      parameters { key: "restart_limit" value { string_value: "0/10m" } }`,
    'scale/1/model.ts': `export { default } from '${scaleModel}';\n`,
  });
  // The server keeps the default limit (5 restarts a minute): only the model's parameter holds its instance down.
  const server = new ServeFnServer({ models: [], repository: { root }, exposeErrors: true, logger: false, collectProcessMetrics: false });
  afterAll(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('wins over the server limit: its first crash leaves the model not ready', async () => {
    await server.start();
    const infer = (parameters: Record<string, string>) =>
      call(server, 'POST', '/v2/models/scale/infer', { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: [1, 2] }], parameters });
    expect((await infer({})).status).toBe(200);
    expect((await infer({ fail: 'exit' })).status).toBe(500);
    expect(await infer({})).toEqual({ status: 503, body: { error: "Model 'scale' version 1 is not ready", code: 'SF_ERR_MODEL_NOT_READY' } });
  });
});

describe("a decorated model's @Instances restartLimit", () => {
  // The server keeps the default limit (5 restarts a minute): only the class's option holds its instance down.
  const server = new ServeFnServer({
    models: [BrittleModel],
    moduleUrl: new URL('../fixtures/models/fragile-model.ts', import.meta.url).href,
    logger: false,
    collectProcessMetrics: false,
  });
  afterAll(() => server.close());

  it('wins over the server limit: its first crash leaves the model unavailable', async () => {
    await server.start();
    expect((await call(server, 'POST', '/brittle/work')).status).toBe(200);
    expect((await call(server, 'POST', '/brittle/die')).body.code).toBe('SF_ERR_INSTANCE_CRASHED');
    expect(await call(server, 'POST', '/brittle/work')).toMatchObject({ status: 503, body: { code: 'SF_ERR_MODEL_UNAVAILABLE' } });
  });
});

