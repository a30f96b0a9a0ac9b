import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { kserveProtocol } from '../../src/protocol/kserve-protocol.js';
import { SystemSharedMemoryRegistry } from '../../src/protocol/system-shared-memory/registry.js';
import { FakeRepository, identityModel, simpleModel } from './fake-repository.js';
import { binaryBody, postInfer, protocolApp } from './protocol-app.js';

/** A client's region: on Linux shm_open('/name') is /dev/shm/name. */
const created: string[] = [];
function createRegion(bytes: Uint8Array): string {
  const key = `/serve-fn-http-${randomUUID()}`;
  writeFileSync(`/dev/shm${key}`, bytes);
  created.push(key);
  return key;
}
const readRegion = (key: string): Buffer => readFileSync(`/dev/shm${key}`);

afterEach(() => {
  for (const key of created.splice(0)) rmSync(`/dev/shm${key}`, { force: true });
});

const int32 = (values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const INPUT0 = Array.from({ length: 16 }, (_, i) => i);
const INPUT1 = Array.from({ length: 16 }, () => 1);

async function simpleApp() {
  return (await protocolApp(new FakeRepository([simpleModel()]))).app;
}

function register(app: Awaited<ReturnType<typeof simpleApp>>, name: string, body: unknown) {
  return app.inject({ method: 'POST', url: `/v2/systemsharedmemory/region/${name}/register`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
}

/** simple_http_shm_client.py's request: both inputs in one region, both outputs in another. */
function shmInferBody(outputOffset = 64): string {
  return JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64 } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64, shared_memory_offset: 64 } },
    ],
    outputs: [
      { name: 'OUTPUT0', parameters: { binary_data: false, shared_memory_region: 'output_data', shared_memory_byte_size: 64 } },
      { name: 'OUTPUT1', parameters: { binary_data: false, shared_memory_region: 'output_data', shared_memory_byte_size: 64, shared_memory_offset: outputOffset } },
    ],
  });
}

describe('system shared memory over HTTP (Triton extension_shared_memory.md)', () => {
  it('registers, reports status and unregisters regions on Triton\'s paths; advertises the extension', async () => {
    const app = await simpleApp();
    const key = createRegion(new Uint8Array(128));
    const registered = await register(app, 'input_data', { key, offset: 0, byte_size: 128 });
    expect(registered.statusCode).toBe(200);
    expect(registered.body).toBe('');
    await register(app, 'tail', { key, offset: 64, byte_size: 64 });
    const all = await app.inject({ method: 'GET', url: '/v2/systemsharedmemory/status' });
    expect(all.json()).toEqual([
      { name: 'input_data', key, offset: 0, byte_size: 128 },
      { name: 'tail', key, offset: 64, byte_size: 64 },
    ]);
    expect((await app.inject({ method: 'GET', url: '/v2/systemsharedmemory/region/tail/status' })).json()).toEqual([{ name: 'tail', key, offset: 64, byte_size: 64 }]);
    expect((await app.inject({ method: 'POST', url: '/v2/systemsharedmemory/region/tail/unregister' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v2/systemsharedmemory/status' })).json()).toEqual([{ name: 'input_data', key, offset: 0, byte_size: 128 }]);
    expect((await app.inject({ method: 'POST', url: '/v2/systemsharedmemory/unregister' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v2/systemsharedmemory/status' })).json()).toEqual([]);
    expect((await app.inject({ method: 'GET', url: '/v2' })).json().extensions).toContain('system_shared_memory');
  });

  it('runs the simple model with its inputs read from one region and its outputs written into another', async () => {
    const app = await simpleApp();
    const inputKey = createRegion(Buffer.concat([int32(INPUT0), int32(INPUT1)]));
    const outputKey = createRegion(new Uint8Array(128));
    expect((await register(app, 'input_data', { key: inputKey, byte_size: 128 })).statusCode).toBe(200);
    expect((await register(app, 'output_data', { key: outputKey, offset: 0, byte_size: 128 })).statusCode).toBe(200);
    const res = await postInfer(app, 'simple', shmInferBody());
    expect(res.statusCode).toBe(200);
    expect(res.headers['inference-header-content-length']).toBeUndefined();
    expect(res.json().outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'output_data', shared_memory_byte_size: 64 } },
      { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'output_data', shared_memory_byte_size: 64, shared_memory_offset: 64 } },
    ]);
    const out = readRegion(outputKey);
    expect([...new Int32Array(out.buffer, out.byteOffset, 32)]).toEqual([...INPUT0.map((v) => v + 1), ...INPUT0.map((v) => v - 1)]);
  });

  it('mixes a shared-memory input with a binary one, whose offsets only the binary inputs advance', async () => {
    const app = await simpleApp();
    const key = createRegion(int32(INPUT1));
    await register(app, 'input_data', { key, byte_size: 64 });
    const json = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64 } },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
    });
    const { body, headers } = binaryBody(json, int32(INPUT0));
    const res = await postInfer(app, 'simple', body, headers);
    expect(res.statusCode).toBe(200);
    expect(res.json().outputs[0].data).toEqual(INPUT0.map((v) => v + 1));
  });

  it('refuses a JSON answer for a shared-memory input larger than the body limit with a 400 naming the limit, before encoding it', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('FP32')]), { bodyLimit: 64 * 1024 });
    const elements = 32 * 1024;
    const key = createRegion(new Uint8Array(elements * 4));
    expect((await register(app, 'values', { key, byte_size: elements * 4 })).statusCode).toBe(200);
    const input = { name: 'INPUT0', datatype: 'FP32', shape: [elements], parameters: { shared_memory_region: 'values', shared_memory_byte_size: elements * 4 } };
    const json = await postInfer(app, 'identity_fp32', JSON.stringify({ inputs: [input], outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }] }));
    expect({ status: json.statusCode, body: json.json() }).toEqual({
      status: 400,
      body: {
        error: `The answer's JSON could take ${128 + 6 * 'OUTPUT0'.length + 21 + elements * 25} bytes, past the limit of ${64 * 1024} bytes (--body-limit): request 'OUTPUT0' with "binary_data": true or in shared memory.`,
        code: 'SF_ERR_JSON_ANSWER_TOO_LARGE',
      },
    });
    const binary = await postInfer(app, 'identity_fp32', JSON.stringify({ inputs: [input], outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }] }));
    expect(binary.statusCode).toBe(200);
    expect(binary.rawPayload.length - Number(binary.headers['inference-header-content-length'])).toBe(elements * 4);
  });

  it('answers bad regions, offsets and sizes with 400 and Triton\'s messages, reads nothing out of bounds, and keeps serving', async () => {
    const app = await simpleApp();
    const key = createRegion(Buffer.concat([int32(INPUT0), int32(INPUT1)]));
    const outputKey = createRegion(new Uint8Array(128));
    const error = (res: { statusCode: number; json(): unknown }) => ({ status: res.statusCode, body: res.json() });

    expect(error(await register(app, 'input_data', { key, offset: 64, byte_size: 65 }))).toEqual({
      status: 400,
      body: { error: `failed to register shared memory region 'input_data': invalid args: [64, 129) does not fit in '${key}' of 128 bytes`, code: 'SF_ERR_SHM_REGISTER_FAILED' },
    });
    expect(error(await register(app, 'input_data', { key: '/serve-fn-no-such-object', byte_size: 8 }))).toMatchObject({ status: 400, body: { code: 'SF_ERR_SHM_REGISTER_FAILED' } });
    expect(error(await register(app, 'input_data', { byte_size: 8 }))).toEqual({ status: 400, body: { error: "Shared memory register request has no 'key' field", code: 'SF_ERR_BAD_REQUEST' } });
    expect(error(await register(app, 'input_data', { key }))).toEqual({ status: 400, body: { error: "Shared memory register request has no 'byte_size' field", code: 'SF_ERR_BAD_REQUEST' } });
    expect(error(await register(app, 'input_data', { key, byte_size: -8 }))).toMatchObject({ status: 400, body: { code: 'SF_ERR_BAD_REQUEST' } });

    expect((await register(app, 'input_data', { key, byte_size: 128 })).statusCode).toBe(200);
    expect(error(await register(app, 'input_data', { key, byte_size: 128 }))).toEqual({ status: 400, body: { error: "shared memory region 'input_data' already in manager", code: 'SF_ERR_SHM_REGION_EXISTS' } });
    expect((await register(app, 'output_data', { key: outputKey, byte_size: 128 })).statusCode).toBe(200);
    expect(error(await app.inject({ method: 'GET', url: '/v2/systemsharedmemory/region/nope/status' }))).toEqual({ status: 400, body: { error: "Unable to find shared memory region: 'nope'", code: 'SF_ERR_SHM_REGION_UNKNOWN' } });

    const infer = (input1: Record<string, unknown>, output1: Record<string, unknown> = { shared_memory_region: 'output_data', shared_memory_byte_size: 64, shared_memory_offset: 64 }) =>
      postInfer(
        app,
        'simple',
        JSON.stringify({
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64 } },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], ...input1 },
          ],
          outputs: [{ name: 'OUTPUT1', parameters: output1 }],
        }),
      );
    const shm = (parameters: Record<string, unknown>) => ({ parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64, ...parameters } });
    // A range that starts inside the region and runs past its end: refused before any byte is read.
    expect(error(await infer(shm({ shared_memory_offset: 96 })))).toEqual({ status: 400, body: { error: "Invalid offset + byte size for shared memory region: 'input_data'", code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' } });
    expect(error(await infer(shm({ shared_memory_offset: 128 })))).toEqual({ status: 400, body: { error: "Invalid offset for shared memory region: 'input_data'", code: 'SF_ERR_SHM_OFFSET_INVALID' } });
    expect(error(await infer(shm({ shared_memory_offset: -64 })))).toMatchObject({ status: 400, body: { code: 'SF_ERR_BAD_REQUEST' } });
    expect(error(await infer(shm({ shared_memory_byte_size: 32 })))).toEqual({
      status: 400,
      body: { error: "Tensor 'INPUT1': shared_memory_byte_size is 32, but shape [1,16] of INT32 needs 64 bytes.", code: 'SF_ERR_TENSOR_DATA' },
    });
    expect(error(await infer(shm({ shared_memory_region: 'nope' })))).toEqual({ status: 400, body: { error: "Unable to find shared memory region: 'nope'", code: 'SF_ERR_SHM_REGION_UNKNOWN' } });
    expect(error(await infer({ parameters: { shared_memory_region: 'input_data' } }))).toMatchObject({ status: 400, body: { code: 'SF_ERR_BAD_REQUEST', error: "input 'INPUT1' sets 'shared_memory_region' without 'shared_memory_byte_size'" } });
    expect(error(await infer({ data: INPUT1, ...shm({}) }))).toMatchObject({ status: 400, body: { error: expect.stringContaining("Input must set only one of the following fields") } });
    // Outputs: the range is checked before the model runs, and a region too small for the result is refused.
    expect(error(await infer(shm({ shared_memory_offset: 64 }), { shared_memory_region: 'output_data', shared_memory_byte_size: 64, shared_memory_offset: 65 }))).toMatchObject({ status: 400, body: { code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' } });
    expect(error(await infer(shm({ shared_memory_offset: 64 }), { shared_memory_region: 'output_data', shared_memory_byte_size: 32 }))).toEqual({
      status: 400,
      body: { error: "Tensor 'OUTPUT1': shared memory size specified with the request for output 'OUTPUT1' (32 bytes) should be at least 64 bytes to hold the results", code: 'SF_ERR_TENSOR_DATA' },
    });
    expect(error(await infer(shm({ shared_memory_offset: 64 }), { shared_memory_region: 'output_data', shared_memory_byte_size: 64, binary_data: true }))).toMatchObject({ status: 400, body: { error: "Output can't set both 'shared_memory_region' and 'binary_data'" } });

    const served = await infer(shm({ shared_memory_offset: 64 }));
    expect(served.statusCode).toBe(200);
    const out = readRegion(outputKey);
    expect([...new Int32Array(out.buffer, out.byteOffset + 64, 16)]).toEqual(INPUT0.map((v) => v - 1));
  });

  it('answers the CUDA routes as a Triton without GPUs does, and leaves them out of the extensions', async () => {
    const app = await simpleApp();
    expect((await app.inject({ method: 'GET', url: '/v2/cudasharedmemory/status' })).json()).toEqual([]);
    expect((await app.inject({ method: 'POST', url: '/v2/cudasharedmemory/unregister' })).statusCode).toBe(200);
    const refused = await app.inject({ method: 'POST', url: '/v2/cudasharedmemory/region/gpu/register', payload: '{}', headers: { 'content-type': 'application/json' } });
    expect({ status: refused.statusCode, body: refused.json() }).toEqual({
      status: 501,
      body: { error: "failed to register CUDA shared memory region: 'gpu', GPUs not supported", code: 'SF_ERR_UNSUPPORTED' },
    });
    expect((await app.inject({ method: 'GET', url: '/v2' })).json().extensions).not.toContain('cuda_shared_memory');
  });

  it('refuses to register with 501 where the system has no shm directory, and does not advertise the extension', async () => {
    const app = Fastify();
    await app.register(kserveProtocol, {
      repository: new FakeRepository([simpleModel()]),
      recorder: new InferenceRecorder({ collectProcessMetrics: false }),
      serverName: 'serve-fn',
      serverVersion: '0.1.0',
      ready: () => true,
      sharedMemory: new SystemSharedMemoryRegistry(undefined, '/nonexistent-shm-directory'),
    });
    const res = await register(app as never, 'r', { key: '/k', byte_size: 8 });
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 501,
      body: { error: 'System shared memory is not available: this system has no /nonexistent-shm-directory', code: 'SF_ERR_SHM_UNAVAILABLE' },
    });
    expect((await app.inject({ method: 'GET', url: '/v2' })).json().extensions).not.toContain('system_shared_memory');
    await app.close();
  });
});
