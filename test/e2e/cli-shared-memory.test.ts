import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { credentials, loadPackageDefinition, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRPC_PROTO_OPTIONS, GRPC_PROTO_PATH } from '../../src/protocol/grpc/grpc-server.js';
import { failure } from '../protocol/grpc-raw.js';
import { startCli, type RunningCli } from './cli-harness.js';

const keys = { input: `/serve-fn-e2e-input-${randomUUID()}`, output: `/serve-fn-e2e-output-${randomUUID()}` };
afterAll(() => Object.values(keys).forEach((key) => rmSync(`/dev/shm${key}`, { force: true })));

const int32 = (values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const INPUT0 = Array.from({ length: 16 }, (_, i) => i);

describe('serve-fn start: system shared memory', () => {
  it('serves an ONNX model on a worker thread with its inputs and outputs in the client\'s regions, and keeps serving after a bad range', async () => {
    writeFileSync(`/dev/shm${keys.input}`, Buffer.concat([int32(INPUT0), int32(INPUT0.map(() => 1))]));
    writeFileSync(`/dev/shm${keys.output}`, Buffer.alloc(128));
    const cli = await startCli(['start', 'examples/triton-repository/models', '--host', '127.0.0.1', '--model-control-mode', 'explicit', '--load-model', 'add_sub']);
    try {
      await cli.waitForOutput(/serve-fn ready at|"msg":"serve-fn ready/);
      const post = (path: string, body: unknown) =>
        fetch(`${cli.base}/v2${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(((await (await fetch(`${cli.base}/v2`)).json()) as { extensions: string[] }).extensions).toContain('system_shared_memory');
      expect((await post('/systemsharedmemory/region/input_data/register', { key: keys.input, offset: 0, byte_size: 128 })).status).toBe(200);
      expect((await post('/systemsharedmemory/region/output_data/register', { key: keys.output, offset: 0, byte_size: 128 })).status).toBe(200);
      const region = (name: string, offset: number) => ({ shared_memory_region: name, shared_memory_byte_size: 64, ...(offset ? { shared_memory_offset: offset } : {}) });
      const infer = (input1Offset: number) =>
        post('/models/add_sub/infer', {
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: region('input_data', 0) },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: region('input_data', input1Offset) },
          ],
          outputs: [
            { name: 'OUTPUT0', parameters: region('output_data', 0) },
            { name: 'OUTPUT1', parameters: region('output_data', 64) },
          ],
        });
      const bad = await infer(96);
      expect({ status: bad.status, body: await bad.json() }).toEqual({
        status: 400,
        body: { error: "Invalid offset + byte size for shared memory region: 'input_data'", code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' },
      });
      const res = await infer(64);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { outputs: { name: string; parameters: object }[] }).outputs.map((o) => [o.name, o.parameters])).toEqual([
        ['OUTPUT0', { shared_memory_region: 'output_data', shared_memory_byte_size: 64 }],
        ['OUTPUT1', { shared_memory_region: 'output_data', shared_memory_byte_size: 64, shared_memory_offset: 64 }],
      ]);
      const out = readFileSync(`/dev/shm${keys.output}`);
      expect([...new Int32Array(out.buffer, out.byteOffset, 32)]).toEqual([...INPUT0.map((v) => v + 1), ...INPUT0.map((v) => v - 1)]);
      expect((await post('/systemsharedmemory/unregister', {})).status).toBe(200);
      expect(await fetch(`${cli.base}/v2/systemsharedmemory/status`).then((r) => r.json())).toEqual([]);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });
});

/** Issue 22: no client action on its shared-memory objects may crash or exhaust the server. */

const REGION_BYTES = 64 * 1024;
/** Past 4 KiB, so that shrinking the object to 4 KiB leaves the range uncovered. */
const FAR = 8192;

const created: string[] = [];
afterAll(() => created.forEach((key) => rmSync(`/dev/shm${key}`, { force: true })));

function createObject(bytes: number): string {
  const key = `/serve-fn-e2e-hostile-${randomUUID()}`;
  writeFileSync(`/dev/shm${key}`, Buffer.alloc(bytes));
  created.push(key);
  return key;
}

function post(cli: RunningCli, path: string, body: unknown): Promise<Response> {
  return fetch(`${cli.base}/v2${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function answer(res: Response): Promise<{ status: number; code?: string }> {
  const body = (await res.json()) as { code?: string };
  return { status: res.status, code: body.code };
}

type Call = (method: string, request?: object) => Promise<Record<string, unknown>>;

function grpcClient(port: number): { call: Call; close: () => void } {
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, GRPC_PROTO_OPTIONS));
  const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  const stub = new Service(`127.0.0.1:${port}`, credentials.createInsecure());
  const call: Call = (method, request = {}) =>
    new Promise((resolve, reject) => {
      (stub[method] as (r: object, cb: (err: ServiceError | null, res: Record<string, unknown>) => void) => void).call(stub, request, (err, res) => (err ? reject(err) : resolve(res)));
    });
  return { call, close: () => stub.close() };
}

const httpRegion = (name: string, offset: number) => ({ shared_memory_region: name, shared_memory_byte_size: 64, shared_memory_offset: offset });
const grpcRegion = (name: string, offset: number) => ({
  shared_memory_region: { string_param: name },
  shared_memory_byte_size: { int64_param: 64 },
  shared_memory_offset: { int64_param: offset },
});

async function live(cli: RunningCli): Promise<number> {
  return (await fetch(`${cli.base}/v2/health/live`)).status;
}

describe('serve-fn start: a shared-memory object the client shrinks', () => {
  let cli: RunningCli;
  let grpcPort: number;
  beforeAll(async () => {
    cli = await startCli(['start', 'examples/triton-repository/models', '--host', '127.0.0.1', '--model-control-mode', 'explicit', '--load-model', 'add_sub']);
    grpcPort = Number((await cli.waitForOutput(/"grpcPort":(\d+)/))[1]);
  });
  afterAll(async () => {
    expect(await cli.stop()).toBe(0);
  });

  for (const size of [0, 4096]) {
    it(`answers 400 over HTTP when the object shrank to ${size} bytes, for an input and for an output, and keeps serving`, async () => {
      const key = createObject(REGION_BYTES);
      const region = `http-${size}`;
      expect((await post(cli, `/systemsharedmemory/region/${region}/register`, { key, byte_size: REGION_BYTES })).status).toBe(200);
      truncateSync(`/dev/shm${key}`, size);
      const input = await post(cli, '/models/add_sub/infer', {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: httpRegion(region, FAR) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
        ],
      });
      expect(await answer(input)).toEqual({ status: 400, code: 'SF_ERR_SHM_OBJECT_CHANGED' });
      const output = await post(cli, '/models/add_sub/infer', {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: httpRegion(region, FAR) }],
      });
      expect(await answer(output)).toEqual({ status: 400, code: 'SF_ERR_SHM_OBJECT_CHANGED' });
      expect(await live(cli)).toBe(200);
      // The object grown back serves again: the refusal was about the object, not a broken region.
      truncateSync(`/dev/shm${key}`, REGION_BYTES);
      writeFileSync(`/dev/shm${key}`, int32(INPUT0), { flag: 'r+' });
      const again = await post(cli, '/models/add_sub/infer', {
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: httpRegion(region, 0) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
      });
      expect(((await again.json()) as { outputs: { data: number[] }[] }).outputs[0].data).toEqual(INPUT0.map((v) => v * 2));
    });

    it(`answers INVALID_ARGUMENT over gRPC when the object shrank to ${size} bytes, for an input and for an output, and keeps serving`, async () => {
      const { call, close } = grpcClient(grpcPort);
      try {
        const key = createObject(REGION_BYTES);
        const region = `grpc-${size}`;
        await call('SystemSharedMemoryRegister', { name: region, key, byte_size: REGION_BYTES });
        truncateSync(`/dev/shm${key}`, size);
        const [inputCode, inputDetails] = await failure(
          call('ModelInfer', {
            model_name: 'add_sub',
            inputs: [
              { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: grpcRegion(region, FAR) },
              { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: INPUT0 } },
            ],
          }),
        );
        expect([inputCode, inputDetails]).toEqual([status.INVALID_ARGUMENT, expect.stringContaining(`shared memory region '${region}'`)]);
        const [outputCode] = await failure(
          call('ModelInfer', {
            model_name: 'add_sub',
            inputs: [
              { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: INPUT0 } },
              { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: INPUT0 } },
            ],
            outputs: [{ name: 'OUTPUT0', parameters: grpcRegion(region, FAR) }],
          }),
        );
        expect(outputCode).toBe(status.INVALID_ARGUMENT);
        expect((await call('ServerLive')).live).toBe(true);
      } finally {
        close();
      }
    });
  }
});

describe('serve-fn start: shared-memory caps, a reload at the cap, and a JSON answer past the body limit', () => {
  const MAX_REGIONS = 48;
  const BODY_LIMIT = 1024 * 1024;
  let cli: RunningCli;
  let grpcPort: number;
  beforeAll(async () => {
    cli = await startCli(
      ['start', 'examples/triton-repository/models', '--host', '127.0.0.1', '--model-control-mode', 'explicit', '--load-model', 'add_sub', '--load-model', 'scale',
        '--shm-max-regions', String(MAX_REGIONS), '--body-limit', String(BODY_LIMIT)],
      { SERVE_FN_SHM_MAX_BYTES: String(4 * BODY_LIMIT) },
    );
    grpcPort = Number((await cli.waitForOutput(/"grpcPort":(\d+)/))[1]);
  });
  afterAll(async () => {
    await post(cli, '/systemsharedmemory/unregister', {});
    expect(await cli.stop()).toBe(0);
  });

  it('refuses a region past the count cap (flag) or the byte cap (env) with a 400 over HTTP and INVALID_ARGUMENT over gRPC; a reload at the cap succeeds', async () => {
    const key = createObject(4096);
    for (let i = 0; i < MAX_REGIONS; i += 1) {
      expect((await post(cli, `/systemsharedmemory/region/r${i}/register`, { key, byte_size: 1 })).status).toBe(200);
    }
    const past = await post(cli, '/systemsharedmemory/region/one-more/register', { key, byte_size: 1 });
    const pastBody = (await past.json()) as { error: string; code: string };
    expect(past.status).toBe(400);
    expect(pastBody).toEqual({ error: expect.stringContaining('--shm-max-regions'), code: 'SF_ERR_SHM_LIMIT' });
    const { call, close } = grpcClient(grpcPort);
    try {
      expect((await failure(call('SystemSharedMemoryRegister', { name: 'one-more', key, byte_size: 1 })))[0]).toBe(status.INVALID_ARGUMENT);
    } finally {
      close();
    }
    const status_ = (await (await fetch(`${cli.base}/v2/systemsharedmemory/status`)).json()) as object[];
    expect(status_).toHaveLength(MAX_REGIONS);
    expect(new Set(status_.flatMap((r) => Object.keys(r)))).toEqual(new Set(['name', 'key', 'offset', 'byte_size']));

    // Repository control at the cap: the reload answers, and the server serves on.
    const reload = await post(cli, '/repository/models/add_sub/load', {});
    expect(reload.status).toBe(200);
    expect(await live(cli)).toBe(200);
    const served = await post(cli, '/models/add_sub/infer', {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: INPUT0 },
      ],
    });
    expect(served.status).toBe(200);

    expect((await post(cli, '/systemsharedmemory/unregister', {})).status).toBe(200);
    const big = createObject(4 * BODY_LIMIT + 1);
    const tooMany = await post(cli, '/systemsharedmemory/region/big/register', { key: big, byte_size: 4 * BODY_LIMIT + 1 });
    expect(await answer(tooMany)).toEqual({ status: 400, code: 'SF_ERR_SHM_LIMIT' });
    expect((await post(cli, '/systemsharedmemory/region/big/register', { key: big, byte_size: 4 * BODY_LIMIT })).status).toBe(200);
    expect((await post(cli, '/systemsharedmemory/region/big/unregister', {})).status).toBe(200);
  });

  it('refuses a JSON answer that could pass the body limit with a 400 naming it, while /v2/health/live answers', async () => {
    const elements = BODY_LIMIT / 2;
    const key = createObject(elements * 4);
    expect((await post(cli, '/systemsharedmemory/region/values/register', { key, byte_size: elements * 4 })).status).toBe(200);
    const inferring = post(cli, '/models/scale/infer', {
      inputs: [{ name: 'VALUES', datatype: 'INT32', shape: [1, elements], parameters: { shared_memory_region: 'values', shared_memory_byte_size: elements * 4 } }],
      outputs: [{ name: 'SCALED', parameters: { binary_data: false } }],
    });
    expect(await live(cli)).toBe(200);
    const res = await inferring;
    const body = (await res.json()) as { error: string; code: string };
    expect(res.status).toBe(400);
    expect(body).toEqual({ error: expect.stringContaining(`${BODY_LIMIT}`), code: 'SF_ERR_JSON_ANSWER_TOO_LARGE' });
    expect(body.error).toContain('--body-limit');
    // A small JSON output of the same input is served.
    const small = await post(cli, '/models/scale/infer', {
      inputs: [{ name: 'VALUES', datatype: 'INT32', shape: [1, elements], parameters: { shared_memory_region: 'values', shared_memory_byte_size: elements * 4 } }],
      outputs: [{ name: 'TOTAL', parameters: { binary_data: false } }],
    });
    expect(small.status).toBe(200);
  });
});
