import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { credentials, loadPackageDefinition, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { GRPC_PROTO_OPTIONS, GRPC_PROTO_PATH, startGrpcServer, type GrpcServerHandle } from '../../src/protocol/grpc/grpc-server.js';
import { SystemSharedMemoryRegistry } from '../../src/protocol/system-shared-memory/registry.js';
import { FakeRepository, simpleModel } from './fake-repository.js';
import { failure } from './grpc-raw.js';
import { postInfer, protocolApp } from './protocol-app.js';

const created: string[] = [];
function createRegion(bytes: Uint8Array): string {
  const key = `/serve-fn-grpc-${randomUUID()}`;
  writeFileSync(`/dev/shm${key}`, bytes);
  created.push(key);
  return key;
}
const int32 = (values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const INPUT0 = Array.from({ length: 16 }, (_, i) => i);
const INPUT1 = Array.from({ length: 16 }, () => 1);

const servers: GrpcServerHandle[] = [];
const closers: (() => void)[] = [];
afterEach(async () => {
  closers.splice(0).forEach((close) => close());
  await Promise.all(servers.splice(0).map((s) => s.close(100)));
  for (const key of created.splice(0)) rmSync(`/dev/shm${key}`, { force: true });
});

type Call = (method: string, request?: object) => Promise<Record<string, unknown>>;

/** A generated-style client (proto-loader over Triton's grpc_service.proto) on a server sharing `sharedMemory`. */
async function client(sharedMemory = new SystemSharedMemoryRegistry()): Promise<Call> {
  const server = await startGrpcServer({
    repository: new FakeRepository([simpleModel()]),
    serverName: 'serve-fn',
    serverVersion: '0.1.0',
    recorder: new InferenceRecorder({ collectProcessMetrics: false }),
    ready: () => true,
    port: 0,
    host: '127.0.0.1',
    sharedMemory,
  });
  servers.push(server);
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, GRPC_PROTO_OPTIONS));
  const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  const stub = new Service(`127.0.0.1:${server.port}`, credentials.createInsecure());
  closers.push(() => stub.close());
  return (method, request = {}) =>
    new Promise((resolve, reject) => {
      (stub[method] as (r: object, cb: (err: ServiceError | null, res: Record<string, unknown>) => void) => void).call(stub, request, (err, res) => (err ? reject(err) : resolve(res)));
    });
}

const shm = (region: string, byteSize: number, offset = 0) => ({
  shared_memory_region: { string_param: region },
  shared_memory_byte_size: { int64_param: byteSize },
  ...(offset ? { shared_memory_offset: { int64_param: offset } } : {}),
});

describe('system shared memory over gRPC (Triton extension_shared_memory.md)', () => {
  it('registers, reports and unregisters regions with Triton\'s RPCs, and advertises the extension', async () => {
    const call = await client();
    const key = createRegion(new Uint8Array(128));
    await call('SystemSharedMemoryRegister', { name: 'input_data', key, offset: 0, byte_size: 128 });
    await call('SystemSharedMemoryRegister', { name: 'tail', key, offset: 64, byte_size: 64 });
    expect((await call('SystemSharedMemoryStatus')).regions).toEqual({
      input_data: { name: 'input_data', key, offset: '0', byte_size: '128' },
      tail: { name: 'tail', key, offset: '64', byte_size: '64' },
    });
    expect(Object.keys((await call('SystemSharedMemoryStatus', { name: 'tail' })).regions as object)).toEqual(['tail']);
    await call('SystemSharedMemoryUnregister', { name: 'tail' });
    await call('SystemSharedMemoryUnregister');
    expect((await call('SystemSharedMemoryStatus')).regions ?? {}).toEqual({});
    expect((await call('ServerMetadata')).extensions).toContain('system_shared_memory');
  });

  it('runs the simple model with inputs from one region and outputs written into another, each output with an empty raw entry', async () => {
    const call = await client();
    const inputKey = createRegion(Buffer.concat([int32(INPUT0), int32(INPUT1)]));
    const outputKey = createRegion(new Uint8Array(128));
    await call('SystemSharedMemoryRegister', { name: 'input_data', key: inputKey, byte_size: 128 });
    await call('SystemSharedMemoryRegister', { name: 'output_data', key: outputKey, byte_size: 128 });
    const res = await call('ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('input_data', 64) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('input_data', 64, 64) },
      ],
      outputs: [
        { name: 'OUTPUT0', parameters: shm('output_data', 64) },
        { name: 'OUTPUT1', parameters: shm('output_data', 64, 64) },
      ],
    });
    expect((res.outputs as { name: string; parameters: object }[]).map((o) => [o.name, o.parameters])).toEqual([
      ['OUTPUT0', { shared_memory_region: { string_param: 'output_data', parameter_choice: 'string_param' }, shared_memory_byte_size: { int64_param: '64', parameter_choice: 'int64_param' } }],
      [
        'OUTPUT1',
        {
          shared_memory_region: { string_param: 'output_data', parameter_choice: 'string_param' },
          shared_memory_byte_size: { int64_param: '64', parameter_choice: 'int64_param' },
          shared_memory_offset: { int64_param: '64', parameter_choice: 'int64_param' },
        },
      ],
    ]);
    expect((res.raw_output_contents as Buffer[]).map((b) => b.byteLength)).toEqual([0, 0]);
    const out = readFileSync(`/dev/shm${outputKey}`);
    expect([...new Int32Array(out.buffer, out.byteOffset, 32)]).toEqual([...INPUT0.map((v) => v + 1), ...INPUT0.map((v) => v - 1)]);
  });

  it('answers bad regions, offsets and sizes INVALID_ARGUMENT with the HTTP messages, and keeps serving', async () => {
    const call = await client();
    const key = createRegion(int32(INPUT0));
    expect(await failure(call('SystemSharedMemoryRegister', { name: 'r', key, offset: 32, byte_size: 64 }))).toEqual([
      status.INVALID_ARGUMENT,
      `failed to register shared memory region 'r': invalid args: [32, 96) does not fit in '${key}' of 64 bytes`,
    ]);
    await call('SystemSharedMemoryRegister', { name: 'r', key, byte_size: 64 });
    expect(await failure(call('SystemSharedMemoryRegister', { name: 'r', key, byte_size: 64 }))).toEqual([status.INVALID_ARGUMENT, "shared memory region 'r' already in manager"]);
    expect(await failure(call('SystemSharedMemoryStatus', { name: 'nope' }))).toEqual([status.INVALID_ARGUMENT, "Unable to find shared memory region: 'nope'"]);
    const infer = (parameters: object) =>
      call('ModelInfer', {
        model_name: 'simple',
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('r', 64) },
        ],
      });
    expect(await failure(infer(shm('r', 64, 32)))).toEqual([status.INVALID_ARGUMENT, "Invalid offset + byte size for shared memory region: 'r'"]);
    expect(await failure(infer(shm('r', 64, 64)))).toEqual([status.INVALID_ARGUMENT, "Invalid offset for shared memory region: 'r'"]);
    expect(await failure(infer(shm('nope', 64)))).toEqual([status.INVALID_ARGUMENT, "Unable to find shared memory region: 'nope'"]);
    expect((await failure(infer({ shared_memory_region: { string_param: 'r' } })))[0]).toBe(status.INVALID_ARGUMENT);
    const served = await infer(shm('r', 64));
    expect((served.raw_output_contents as Buffer[]).length).toBe(2);
  });

  it('shares its regions with HTTP: a region registered over gRPC serves an HTTP infer', async () => {
    const sharedMemory = new SystemSharedMemoryRegistry();
    const call = await client(sharedMemory);
    const { app } = await protocolApp(new FakeRepository([simpleModel()]), { sharedMemory });
    const key = createRegion(Buffer.concat([int32(INPUT0), int32(INPUT1)]));
    await call('SystemSharedMemoryRegister', { name: 'input_data', key, byte_size: 128 });
    expect((await app.inject({ url: '/v2/systemsharedmemory/status' })).json()).toEqual([{ name: 'input_data', key, offset: 0, byte_size: 128 }]);
    const res = await postInfer(
      app,
      'simple',
      JSON.stringify({
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64 } },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'input_data', shared_memory_byte_size: 64, shared_memory_offset: 64 } },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
      }),
    );
    expect(res.json().outputs[0].data).toEqual(INPUT0.map((v) => v + 1));
    sharedMemory.unregister();
  });

  it('answers the CUDA RPCs as a Triton without GPUs: nothing registered, registering UNIMPLEMENTED', async () => {
    const call = await client();
    expect((await call('CudaSharedMemoryStatus')).regions ?? {}).toEqual({});
    expect(await call('CudaSharedMemoryUnregister')).toEqual({});
    expect(await failure(call('CudaSharedMemoryRegister', { name: 'gpu', byte_size: 8 }))).toEqual([status.UNIMPLEMENTED, "failed to register CUDA shared memory region: 'gpu', GPUs not supported"]);
    expect((await call('ServerMetadata')).extensions).not.toContain('cuda_shared_memory');
  });
});
