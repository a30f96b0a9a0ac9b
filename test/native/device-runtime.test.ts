import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEAK_COUNTERS, setUpNpuTests, REAL_HARDWARE, type NpuTestEnv } from './npu-test-env.js';

const GIB = 1024 ** 3;

// Loads and runs a model in a worker thread; unloads it only when asked to, so a worker that exits
// with the model still loaded shows whether environment teardown releases it.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(workerData.addon);
(async () => {
  const model = await addon.loadModel({ libraryPath: workerData.libraryPath, deviceId: 1, file: workerData.file });
  const [sum] = await model.execute([new Float32Array([1, 2, 3, 4]), new Float32Array([1, 1, 1, 1])], 1);
  if (workerData.unload) await model.unload();
  parentPort.postMessage(Array.from(new Float32Array(sum)));
})();
`;

function runWorker(workerData: Record<string, unknown>): Promise<number[]> {
  return new Promise((done, fail) => {
    let result: number[] = [];
    const worker = new Worker(WORKER, { eval: true, workerData });
    worker.on('message', (message: number[]) => (result = message));
    worker.on('error', fail);
    worker.on('exit', () => done(result));
  });
}

describe.skipIf(REAL_HARDWARE)('device runtime lifecycle', () => {
  let env: NpuTestEnv;
  const load = (deviceId: number) =>
    env.binding.loadModel({ libraryPath: env.libraryPath, deviceId, file: env.modelFile('add_dyn') });
  const initCalls = () => [env.counter('acl_init_calls'), env.counter('acl_finalize_calls')];

  beforeAll(() => {
    env = setUpNpuTests();
  });
  afterAll(() => env.cleanup());

  it('calls aclInit once while any model is loaded and aclFinalize after the last unload', async () => {
    expect(initCalls()).toEqual([0, 0]);
    const first = await load(0);
    const second = await load(1);
    expect(initCalls()).toEqual([1, 0]);
    await first.unload();
    expect(initCalls()).toEqual([1, 0]);
    await env.binding.describeDevices(env.libraryPath);
    expect(initCalls()).toEqual([1, 0]);
    await second.unload();
    expect(initCalls()).toEqual([1, 1]);
    const third = await load(0);
    expect(initCalls()).toEqual([2, 1]);
    await third.unload();
    expect(initCalls()).toEqual([2, 2]);
    expect(env.counter('devices_set')).toBe(0);
  });

  it('reports each device with the memory its loaded models use', async () => {
    const [inits, finalizes] = initCalls();
    const model = await load(1);
    expect(await env.binding.describeDevices(env.libraryPath)).toEqual({
      libraryPath: env.sim!.fullLibrary,
      variant: 'ascendcl',
      version: '1.0.0',
      deviceCount: 2,
      devices: [
        { id: 0, memoryTotal: GIB, memoryFree: GIB },
        { id: 1, memoryTotal: GIB, memoryFree: GIB - 392 },
      ],
    });
    await model.unload();
    expect(initCalls()).toEqual([inits! + 1, finalizes! + 1]);
  });

  it('shares one aclInit across worker threads and releases a model its worker left loaded', async () => {
    const main = await load(0);
    const [inits, finalizes] = initCalls();
    const workerData = { addon: resolve('native/build/Release/serve_fn_npu.node'), libraryPath: env.libraryPath, file: env.modelFile('add_dyn') };
    expect(await runWorker({ ...workerData, unload: true })).toEqual([2, 3, 4, 5]);
    expect(await runWorker({ ...workerData, unload: false })).toEqual([2, 3, 4, 5]);
    expect(initCalls()).toEqual([inits, finalizes]);
    expect([env.counter('models_loaded'), env.counter('contexts'), env.counter('device_allocs')]).toEqual([1, 1, 4]);
    await main.unload();
    expect(initCalls()).toEqual([inits, finalizes! + 1]);
    expect(LEAK_COUNTERS.map((name) => env.counter(name))).toEqual(LEAK_COUNTERS.map(() => 0));
  });
});
