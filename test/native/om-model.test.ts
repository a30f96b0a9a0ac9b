import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NativeOmModel } from '../../src/backends/npu/native-binding.js';
import { LEAK_COUNTERS, MISSING_DEVICE, REAL_HARDWARE, f32, setUpNpuTests, type FixtureName, type NpuTestEnv } from './npu-test-env.js';

const SIM_ONLY = !REAL_HARDWARE;

describe('OM models through the addon', () => {
  let env: NpuTestEnv;
  const load = (name: FixtureName, deviceId = 0): Promise<NativeOmModel> =>
    env.binding.loadModel({ libraryPath: env.libraryPath, deviceId, file: env.modelFile(name) });
  const outstanding = () => Object.fromEntries(LEAK_COUNTERS.map((name) => [name, env.counter(name)]));

  beforeAll(() => {
    env = setUpNpuTests();
  });
  afterAll(() => env.cleanup());

  it('describes inputs, outputs and batch gears', async () => {
    const model = await load('add_dyn');
    const tensor = (name: unknown) => ({ name, dims: [-1, 4], dataType: 0, byteSize: 128 });
    expect(model.describe()).toEqual({
      inputs: [tensor('a'), tensor('b')],
      outputs: [tensor(REAL_HARDWARE ? expect.any(String) : 'sum')],
      batchGears: [1, 4, 8],
    });
    expect(model.unloaded).toBe(false);
    await model.unload();
    expect(model.unloaded).toBe(true);
  });

  it('pads a batch of 3 to gear 4 and trims the output back to 3 rows', async () => {
    const model = await load('add_dyn');
    const a = f32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
    const [sum] = await model.execute([a, new Float32Array(12).fill(0.25)], 3);
    expect(new Float32Array(sum!)).toEqual(f32(1.25, 2.25, 3.25, 4.25, 5.25, 6.25, 7.25, 8.25, 9.25, 10.25, 11.25, 12.25));
    if (SIM_ONLY) expect(env.counter('last_batch_size')).toBe(4);
    for (const [batch, gear] of [[1, 1], [5, 8], [8, 8], [4, 4]]) {
      const ones = new Float32Array(4 * batch!).fill(1);
      const [out] = await model.execute([ones, ones], batch!);
      expect(new Float32Array(out!)).toEqual(new Float32Array(4 * batch!).fill(2));
      if (SIM_ONLY) expect(env.counter('last_batch_size')).toBe(gear);
    }
    await model.unload();
  });

  it('runs mul, relu, matmul and int32 add with exact results', async () => {
    const bytes = readFileSync(env.modelFile('mul_static'));
    const mul = await env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, bytes });
    const [product] = await mul.execute([f32(1, 2, 3, 4, 5, 6), f32(0.5, -1, 2, 0, 1.5, 10)], 2);
    expect(new Float32Array(product!)).toEqual(f32(0.5, -2, 6, 0, 7.5, 60));

    const relu = await load('relu_static');
    const [y] = await relu.execute([f32(-2, -1, 0, 1, 2, -3.5, 4.25, 0.125)], 2);
    expect(new Float32Array(y!)).toEqual(f32(0, 0, 0, 1, 2, 0, 4.25, 0.125));

    const matmul = await load('matmul_dyn');
    const [rows] = await matmul.execute([f32(1, 0, 0, 0, 1, 0, 1, 1, 1)], 3);
    expect(new Float32Array(rows!)).toEqual(f32(1, 2, 3, 4, 9, 12));

    const add = await load('add_int32');
    const [sum] = await add.execute([new Int32Array([2147483646, -5, 7, 0]), new Int32Array([1, 5, -8, 1])], 1);
    expect(new Int32Array(sum!)).toEqual(new Int32Array([2147483647, 0, -1, 1]));
    await Promise.all([mul.unload(), relu.unload(), matmul.unload(), add.unload()]);
  });

  it.skipIf(REAL_HARDWARE)('allocates buffers once per model, reuses them, and frees everything on unload', async () => {
    const before = outstanding();
    const model = await load('add_dyn');
    const loaded = {
      device_allocs: 4, device_bytes: 392, host_allocs: 3, contexts: 1, streams: 1, devices_set: 1,
      models_loaded: 1, model_descs: 1, datasets: 2, data_buffers: 4,
    };
    expect(before).toEqual(Object.fromEntries(LEAK_COUNTERS.map((name) => [name, 0])));
    expect(outstanding()).toEqual(loaded);
    for (let i = 0; i < 5; i++) await model.execute([f32(1, 2, 3, 4), f32(1, 2, 3, 4)], 1);
    expect(outstanding()).toEqual(loaded);
    await model.unload();
    expect(outstanding()).toEqual(before);
  });

  it('refuses requests that do not fit the model before anything runs', async () => {
    const dynamic = await load('add_dyn');
    const fixed = await load('mul_static');
    expect(() => dynamic.execute([f32(1, 2, 3, 4)], 1)).toThrow(new RangeError('expected 2 inputs, got 1'));
    expect(() => dynamic.execute([f32(1, 2, 3, 4, 5, 6, 7), f32(1, 2, 3, 4, 5, 6, 7, 8)], 2)).toThrow(
      new RangeError("input 'a' needs 32 bytes, got 28"),
    );
    expect(() => dynamic.execute([new Float32Array(36), new Float32Array(36)], 9)).toThrow(
      new RangeError('batch 9 is outside the compiled gears (largest 8)'),
    );
    expect(() => dynamic.execute([f32(), f32()], 0)).toThrow(new RangeError('batch 0 is outside the compiled gears (largest 8)'));
    expect(() => fixed.execute([f32(1, 2, 3, 4, 5), f32(1, 2, 3, 4, 5, 6)], 2)).toThrow(new RangeError("input 'x' needs 24 bytes, got 20"));
    expect(() => fixed.execute([[1, 2], f32()] as never, 1)).toThrow(new TypeError('input 0 must be a TypedArray'));
    expect(() => fixed.execute([f32(), f32()], 1.5)).toThrow(new TypeError('batch must be a whole number from 0 to 1073741824'));
    await Promise.all([dynamic.unload(), fixed.unload()]);
  });

  it('refuses to run after unload, and unloading twice is harmless', async () => {
    const model = await load('add_dyn');
    await model.unload();
    expect(() => model.execute([f32(1, 2, 3, 4), f32(1, 2, 3, 4)], 1)).toThrow(new Error('the model has been unloaded'));
    await expect(model.unload()).resolves.toBeUndefined();
  });

  it('runs executions queued before unload, then unloads', async () => {
    const model = await load('add_dyn');
    const run = model.execute([f32(1, 1, 1, 1), f32(2, 2, 2, 2)], 1);
    const unloaded = model.unload();
    expect(() => model.execute([f32(1, 1, 1, 1), f32(2, 2, 2, 2)], 1)).toThrow('the model has been unloaded');
    expect(new Float32Array((await run)[0]!)).toEqual(f32(3, 3, 3, 3));
    await unloaded;
  });

  it('rejects with the ACL function, code and runtime message when AscendCL fails', async () => {
    const notAModel = join(env.scratchDir, 'not-a-model.om');
    writeFileSync(notAModel, 'plain text');
    const failures = [
      [() => env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, file: notAModel }), 'aclmdlLoadFromFile', 100013],
      [() => env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, bytes: new Uint8Array(16) }), 'aclmdlLoadFromMem', 100013],
      [() => env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, file: join(env.scratchDir, 'none.om') }), 'aclmdlLoadFromFile', 145002],
      [() => load('add_dyn', MISSING_DEVICE), 'aclrtSetDevice', 107001],
    ] as const;
    for (const [start, fn, code] of failures) {
      const error = await start().then(() => undefined, (err: unknown) => err as Error & Record<string, unknown>);
      expect(error?.aclFunction).toBe(fn);
      if (SIM_ONLY) {
        expect(error?.aclCode).toBe(code);
        expect(error?.message).toBe(`${fn} failed with ACL error ${code}: ${String(error?.aclMessage)}`);
        expect(error?.aclMessage).toMatch(new RegExp(`^\\[sim ${code}\\] ${fn}: `));
      }
    }
    if (SIM_ONLY) expect(outstanding()).toEqual(Object.fromEntries(LEAK_COUNTERS.map((name) => [name, 0])));
  });

  it('rejects bad load options and a missing library without touching AscendCL', async () => {
    const file = env.modelFile('add_dyn');
    expect(() => env.binding.loadModel({ deviceId: 0 })).toThrow(new TypeError('give exactly one of file (a path) or bytes (a Uint8Array)'));
    expect(() => env.binding.loadModel({ deviceId: -1, file })).toThrow(new TypeError('deviceId must be a whole number from 0 to 2147483647'));
    const missing = join(env.scratchDir, 'no-such-dir');
    await expect(env.binding.loadModel({ libraryPath: missing, deviceId: 0, file })).rejects.toThrow(
      `AscendCL library not found; tried: ${missing}: cannot open shared object file: No such file or directory`,
    );
  });
});
