import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NativeOmModel } from '../../src/backends/npu/native-binding.js';
import { LEAK_COUNTERS, REAL_HARDWARE, TEST_DEVICES, f32, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';

const DELAY_ENV = 'ACL_SIM_EXECUTE_DELAY_MS';

function rows(batch: number, value: number): Float32Array {
  return new Float32Array(4 * batch).fill(value);
}

describe('concurrent executions', () => {
  let env: NpuTestEnv;
  const load = (deviceId: number): Promise<NativeOmModel> =>
    env.binding.loadModel({ libraryPath: env.libraryPath, deviceId, file: env.modelFile('add_dyn') });

  beforeAll(() => {
    env = setUpNpuTests();
  });
  afterEach(() => {
    delete process.env[DELAY_ENV];
  });
  afterAll(() => env.cleanup());

  it.skipIf(REAL_HARDWARE)('serializes executions of one model while different models run in parallel', async () => {
    const [first, second] = await Promise.all([load(TEST_DEVICES[0]!), load(TEST_DEVICES[0]!)]);
    process.env[DELAY_ENV] = '25';
    env.resetPeaks();
    const runs = [first!, second!].flatMap((model, m) =>
      [1, 2, 3, 4].map((i) => model.execute([rows(i, i), rows(i, 10 * m)], i).then(([out]) => new Float32Array(out!))),
    );
    const results = await Promise.all(runs);
    expect(results).toEqual([0, 10].flatMap((offset) => [1, 2, 3, 4].map((i) => rows(i, i + offset))));
    expect(env.counter('max_concurrent_executes')).toBe(1);
    expect(env.counter('max_concurrent_executes_all')).toBe(2);
    await Promise.all([first!.unload(), second!.unload()]);
  });

  it('keeps instances on two devices apart, each in its own context', async () => {
    const devices = [0, 1, 2, 3].map((i) => TEST_DEVICES[i % TEST_DEVICES.length]!);
    const instances = await Promise.all(devices.map(load));
    if (!REAL_HARDWARE) expect([env.counter('contexts'), env.counter('streams'), env.counter('models_loaded')]).toEqual([4, 4, 4]);
    const runs = instances.flatMap((model, n) =>
      [1, 3, 8].map((batch) => model.execute([rows(batch, n), rows(batch, 100)], batch).then(([out]) => new Float32Array(out!))),
    );
    expect(await Promise.all(runs)).toEqual(instances.flatMap((_, n) => [1, 3, 8].map((batch) => rows(batch, n + 100))));
    await Promise.all(instances.map((model) => model.unload()));
    if (!REAL_HARDWARE) expect(LEAK_COUNTERS.map((name) => env.counter(name))).toEqual(LEAK_COUNTERS.map(() => 0));
  });

  it.skipIf(REAL_HARDWARE)('leaves the event loop free during a long execution', async () => {
    const model = await load(TEST_DEVICES[0]!);
    // Long enough that even a starved test process sees several ticks during the execution.
    process.env[DELAY_ENV] = '1000';
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const started = performance.now();
    const [out] = await model.execute([f32(1, 2, 3, 4), f32(4, 3, 2, 1)], 1);
    const elapsed = performance.now() - started;
    clearInterval(timer);
    expect(new Float32Array(out!)).toEqual(f32(5, 5, 5, 5));
    expect(elapsed).toBeGreaterThanOrEqual(999);
    // A blocked JS thread would let at most one tick through; a free one gets about 100.
    expect(ticks).toBeGreaterThanOrEqual(5);
    await model.unload();
  });
});
