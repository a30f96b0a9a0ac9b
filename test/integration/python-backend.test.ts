import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials, Metadata, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { DoublerModel } from '../fixtures/models/tensor-models.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { call, failure, inferenceMethod, same } from '../protocol/grpc-raw.js';
import { messages, parse, pb, rawBytes, strings } from '../protocol/protobuf-wire.js';

/**
 * Triton Python backend models written for this repository (test/fixtures/python-backend), served
 * in stub processes beside a decorated @Tensors model (`doubler`, for BLS), over HTTP and gRPC.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/python-backend', import.meta.url));
const python = spawnSync('python3', ['-c', 'import numpy'], { encoding: 'utf8' });
const usable = python.status === 0;

const infoOf = (res: { json(): { outputs: { name: string; data: string[] }[] } }): Record<string, unknown> =>
  JSON.parse(res.json().outputs.find((o) => o.name === 'INFO')!.data[0]) as Record<string, unknown>;

describe.skipIf(!usable)(`the Python backend${usable ? '' : ' (skipped: python3 with numpy is missing)'}`, () => {
  let server: ServeFnServer;
  let root: string;
  const post = (url: string, payload: unknown) => server.app.inject({ method: 'POST', url, payload: payload as object });
  const utilsRequest = (extra: Record<string, unknown> = {}) => ({
    inputs: [
      { name: 'X', datatype: 'FP32', shape: [1, 2], data: [1.5, -2] },
      { name: 'TEXT', datatype: 'BYTES', shape: [1, 1], data: ['héllo'] },
    ],
    ...extra,
  });

  beforeAll(async () => {
    root = scratchFolder('python-backend');
    cpSync(FIXTURES, root, { recursive: true });
    server = new ServeFnServer({
      models: [DoublerModel],
      moduleUrl: new URL('../fixtures/models/tensor-models.ts', import.meta.url).href,
      repository: { root, controlMode: 'explicit', startupModels: ['pb_utils_all', 'pb_stream', 'pb_crash', 'pb_two_instances'] },
      grpc: { port: 0 },
      collectProcessMetrics: false,
      // As `serve-fn dev` runs: a 500's message reaches the client, so the tests read it.
      exposeErrors: true,
      restartPolicy: { maxRestarts: 5, windowMs: 60_000 },
    });
    await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it('runs execute on the tensors: FP32 and BYTES in and out, request and response parameters, the args dict', async () => {
    const res = await post('/v2/models/pb_utils_all/infer', utilsRequest({ id: 'req-1', parameters: { echo: 'hi' } }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.outputs.find((o: { name: string }) => o.name === 'Y')).toEqual({ name: 'Y', datatype: 'FP32', shape: [1, 2], data: [3, -4] });
    expect(body.outputs.find((o: { name: string }) => o.name === 'TEXT_OUT')).toEqual({ name: 'TEXT_OUT', datatype: 'BYTES', shape: [1, 1], data: ['HÉLLO'] });
    expect(body.parameters).toMatchObject({ echo: 'hi' });
    expect(infoOf(res)).toMatchObject({
      args: ['model_config', 'model_instance_device_id', 'model_instance_kind', 'model_instance_name', 'model_name', 'model_repository', 'model_version'],
      model_name: 'pb_utils_all', model_version: '1', model_instance_kind: 'CPU', model_instance_device_id: '0',
      request_id: 'req-1', correlation_id: 0, flags: 0, requested_output_names: ['INFO', 'TEXT_OUT', 'Y'], is_cancelled: false,
      x_dims: [2], y_dtype: 'float32', final_flag: 1,
    });
  });

  it('applies auto_complete_config at load: the optional input it adds is in the configuration and is read', async () => {
    const config = (await server.app.inject({ method: 'GET', url: '/v2/models/pb_utils_all/config' })).json();
    expect(config.input.map((i: { name: string }) => i.name)).toEqual(['X', 'TEXT', 'SCALE']);
    const res = await post('/v2/models/pb_utils_all/infer', utilsRequest({ inputs: [...utilsRequest().inputs, { name: 'SCALE', datatype: 'FP32', shape: [1, 1], data: [10] }], outputs: [{ name: 'Y' }] }));
    expect(res.json().outputs).toEqual([{ name: 'Y', datatype: 'FP32', shape: [1, 2], data: [30, -40] }]);
  });

  it('maps TritonError codes to HTTP statuses as Triton does, and an exception from execute to a 500', async () => {
    const codes: Record<string, number> = { INVALID_ARG: 400, NOT_FOUND: 404, UNAVAILABLE: 503, UNSUPPORTED: 501, INTERNAL: 500, ALREADY_EXISTS: 400 };
    for (const [code, httpStatus] of Object.entries(codes)) {
      const res = await post('/v2/models/pb_utils_all/infer', utilsRequest({ parameters: { error_code: code } }));
      expect([code, res.statusCode]).toEqual([code, httpStatus]);
      if (httpStatus < 500) expect(res.json().error).toBe(`Model 'pb_utils_all' answered with an error: asked for ${code}`);
    }
    const raised = await post('/v2/models/pb_utils_all/infer', utilsRequest({ parameters: { raise: true } }));
    expect(raised.statusCode).toBe(500);
  });

  it('maps TritonError codes to gRPC statuses', async () => {
    const client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
    try {
      const request = (code: string): Buffer => Buffer.concat([
        pb.string(1, 'pb_utils_all'),
        pb.mapEntry(4, 'error_code', pb.string(3, code)),
        pb.message(5, pb.string(1, 'X'), pb.string(2, 'FP32'), pb.packedVarints(3, [1, 2])),
        pb.message(5, pb.string(1, 'TEXT'), pb.string(2, 'BYTES'), pb.packedVarints(3, [1, 1])),
        pb.bytes(7, Buffer.from(new Float32Array([1, 2]).buffer)),
        pb.bytes(7, Buffer.concat([Buffer.from([1, 0, 0, 0]), Buffer.from('a')])),
      ]);
      expect(await failure(call(client, 'ModelInfer', request('INVALID_ARG')))).toEqual([status.INVALID_ARGUMENT, "Model 'pb_utils_all' answered with an error: asked for INVALID_ARG"]);
      expect(await failure(call(client, 'ModelInfer', request('NOT_FOUND')))).toEqual([status.NOT_FOUND, "Model 'pb_utils_all' answered with an error: asked for NOT_FOUND"]);
      expect((await failure(call(client, 'ModelInfer', request('UNAVAILABLE'))))[0]).toBe(status.UNAVAILABLE);
      expect((await failure(call(client, 'ModelInfer', request('UNSUPPORTED'))))[0]).toBe(status.UNIMPLEMENTED);
    } finally {
      client.close();
    }
  });

  it('batches: one execute takes several requests, as the statistics show', async () => {
    const before = (await server.app.inject({ method: 'GET', url: '/v2/models/pb_utils_all/stats' })).json().model_stats[0];
    const answers = await Promise.all(Array.from({ length: 6 }, () => post('/v2/models/pb_utils_all/infer', utilsRequest())));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(Math.max(...answers.map((a) => a.json().parameters.batch_size as number))).toBeGreaterThan(1);
    const after = (await server.app.inject({ method: 'GET', url: '/v2/models/pb_utils_all/stats' })).json().model_stats[0];
    expect(after.inference_count - before.inference_count).toBe(6);
    expect(after.execution_count - before.execution_count).toBeLessThan(6);
  });

  it('BLS: InferenceRequest.exec() reaches a decorated model served beside the repository, and a missing one is has_error()', async () => {
    const res = await post('/v2/models/pb_utils_all/infer', utilsRequest({ parameters: { bls: 'doubler' }, outputs: [{ name: 'Y' }] }));
    expect(res.json(), res.body).toHaveProperty('outputs');
    expect(res.json().outputs).toEqual([{ name: 'Y', datatype: 'FP32', shape: [1, 2], data: [3, -4] }]);
    const missing = await post('/v2/models/pb_utils_all/infer', utilsRequest({ parameters: { bls: 'no_such_model' } }));
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toMatch(/^Model 'pb_utils_all' answered with an error: BLS failed: .*no_such_model/);
  });

  it('exports custom metrics (MetricFamily counter and gauge) on /metrics', async () => {
    await post('/v2/models/pb_utils_all/infer', utilsRequest());
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    const counter = /^pb_test_requests_total\{model="pb_utils_all"\} (\d+)$/m.exec(text);
    expect(Number(counter?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^pb_test_last_batch \d+$/m);
    expect(text).toContain('# HELP pb_test_requests_total requests seen by pb_utils_all');
  });

  it('runs instance_group count 2 as two stub processes', async () => {
    const pids = await Promise.all([1, 2].map(() => post('/v2/models/pb_two_instances/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [1] }] })));
    expect(new Set(pids.map((r) => r.json().outputs[0].data[0])).size).toBe(2);
  });

  it('a crashing stub fails its request with a 500 and is restarted', async () => {
    const crash = await post('/v2/models/pb_crash/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [-1] }] });
    expect([crash.statusCode, crash.json().code]).toEqual([500, 'SF_ERR_INSTANCE_CRASHED']);
    let answer;
    for (let i = 0; i < 100; i++) {
      answer = await post('/v2/models/pb_crash/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [7] }] });
      if (answer.statusCode === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer?.json().outputs[0].data).toEqual([7]);
  });

  it('an initialize that raises, or a model.py that fails to import, fails that model alone with the reason in the index', async () => {
    for (const name of ['pb_init_fails', 'pb_import_fails']) expect((await post(`/v2/repository/models/${name}/load`, {})).statusCode).toBe(500);
    const index = (await post('/v2/repository/index', {})).json() as { name: string; state: string; reason?: string }[];
    const entry = (name: string) => index.find((e) => e.name === name);
    expect(entry('pb_init_fails')).toMatchObject({ state: 'UNAVAILABLE' });
    expect(entry('pb_init_fails')?.reason).toContain('ValueError: the weights file is missing');
    expect(entry('pb_import_fails')?.reason).toContain("ModuleNotFoundError: No module named 'serve_fn_no_such_module'");
    expect(entry('pb_utils_all')?.state).toBe('READY');
  });

  it('a model whose interpreter is missing fails its load, naming what to install', async () => {
    cpSync(join(root, 'pb_crash'), join(root, 'pb_no_python'), { recursive: true });
    writeFileSync(join(root, 'pb_no_python', 'config.pbtxt'), readFileSync(join(root, 'pb_crash', 'config.pbtxt'), 'utf8').replace('pb_crash', 'pb_no_python') +
      'parameters { key: "PYTHON_INTERPRETER" value { string_value: "/nonexistent/python3" } }\n');
    expect((await post('/v2/repository/models/pb_no_python/load', {})).statusCode).toBe(500);
    const index = (await post('/v2/repository/index', {})).json() as { name: string; reason?: string }[];
    expect(index.find((e) => e.name === 'pb_no_python')?.reason).toContain("the Python interpreter '/nonexistent/python3' was not found: install python3 with numpy");
  });

  it('streams a decoupled model\'s responses on gRPC ModelStreamInfer, and is_cancelled() turns true when the client cancels', async () => {
    const client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
    const streamRequest = (n: number): Buffer => Buffer.concat([
      pb.string(1, 'pb_stream'),
      pb.message(5, pb.string(1, 'N'), pb.string(2, 'INT32'), pb.packedVarints(3, [1]), pb.message(5, pb.packedVarints(2, [n]))),
    ]);
    try {
      const outs = await new Promise<number[]>((resolve, reject) => {
        const stream = client.makeBidiStreamRequest(inferenceMethod('ModelStreamInfer'), same, same, new Metadata());
        const got: number[] = [];
        stream.on('data', (m: Buffer) => got.push(rawBytes(messages(parse(m), 2)[0], 6)[0].readInt32LE(0)));
        stream.on('error', reject);
        stream.on('end', () => resolve(got));
        stream.write(streamRequest(3));
        stream.end();
      });
      expect(outs).toEqual([0, 1, 2]);
      await new Promise<void>((resolve) => {
        const stream = client.makeBidiStreamRequest(inferenceMethod('ModelStreamInfer'), same, same, new Metadata());
        stream.on('data', (m: Buffer) => {
          expect(strings(parse(m), 1)).toEqual([]);
          stream.cancel();
        });
        stream.on('error', () => resolve());
        stream.write(streamRequest(-1));
      });
      const marker = join(root, 'pb_stream', 'cancelled');
      for (let i = 0; i < 100 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 100));
      expect(readFileSync(marker, 'utf8')).toMatch(/^cancelled=True after \d+$/);
    } finally {
      client.close();
    }
  });

  it('streams on HTTP generate_stream', async () => {
    const res = await post('/v2/models/pb_stream/generate_stream', { N: 2 });
    expect(res.body).toBe('data: {"model_name":"pb_stream","model_version":"1","OUT":0}\n\ndata: {"model_name":"pb_stream","model_version":"1","OUT":1}\n\n');
  });

  it('runs finalize when the model is unloaded', async () => {
    const res = await post('/v2/repository/models/pb_stream/unload', {});
    expect(res.statusCode).toBe(200);
    expect(readFileSync(join(root, 'pb_stream', 'finalized-pb_stream_0'), 'utf8')).toBe('finalized');
  });
});
