import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNpuBinding } from '../../src/backends/npu/native-binding.js';
import { ACL_LIBRARY_ENV } from '../../src/backends/npu/npu-library.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { ADD_OM_ENV, NpuAdd, type AddAnswer } from '../fixtures/npu/npu-models.js';
import { LEAK_COUNTERS, REAL_HARDWARE, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';

const ADDON_BUILT = !('reason' in loadNpuBinding());
const range = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
// Exactly representable in FP32, so sums compare exactly.
const row = (k: number): number[] => range(4, (i) => k * 10 + i + 0.5);
const ones = (): number[] => [1, 1, 1, 1];
const plusOne = (k: number): number[] => row(k).map((v) => v + 1);

/** Points instance threads at the simulated AscendCL, as production finds the real one. */
function useLibrary(env: NpuTestEnv): () => void {
  const previous = process.env[ACL_LIBRARY_ENV];
  if (env.libraryPath) process.env[ACL_LIBRARY_ENV] = env.libraryPath;
  return () => {
    if (previous === undefined) delete process.env[ACL_LIBRARY_ENV];
    else process.env[ACL_LIBRARY_ENV] = previous;
  };
}

describe.skipIf(!ADDON_BUILT)('a served OM model', () => {
  let env: NpuTestEnv;
  let restoreLibrary: () => void;
  const outstanding = (): number[] => LEAK_COUNTERS.map((name) => env.counter(name));

  beforeAll(() => {
    env = setUpNpuTests();
    restoreLibrary = useLibrary(env);
  });

  afterAll(() => {
    restoreLibrary?.();
    env?.cleanup();
  });

  describe('through a decorated class with two NPU instances', () => {
    let server: ServeFnServer;

    beforeAll(async () => {
      process.env[ADD_OM_ENV] = env.modelFile('add_dyn');
      server = new ServeFnServer({
        models: [NpuAdd],
        moduleUrl: new URL('../fixtures/npu/npu-models.ts', import.meta.url).href,
        collectProcessMetrics: false,
      });
      await server.start();
    });

    afterAll(async () => {
      await server?.close();
      delete process.env[ADD_OM_ENV];
    });

    it('batches concurrent requests, pads them to a gear and runs each batch on its own instance and device', async () => {
      const executesBefore = REAL_HARDWARE ? 0 : env.counter('executes');
      const answers = await Promise.all(
        range(6, (k) => server.app.inject({ method: 'POST', url: '/npu-add', payload: { a: row(k), b: ones() } })),
      );
      const bodies = answers.map((res) => {
        expect(res.statusCode).toBe(200);
        return res.json() as AddAnswer;
      });
      expect(bodies.map((b) => b.sum)).toEqual(range(6, plusOne));
      // Two batches of three (the preferred size); the model computed gear 4 and the addon trimmed it to 3 rows.
      expect(bodies.map((b) => [b.batch, b.rows])).toEqual(range(6, () => [3, 3]));
      const placements = new Set(bodies.map((b) => `${b.instance}@${b.device}`));
      expect([...placements].sort()).toEqual(['0@npu:0', '1@npu:1']);
      if (!REAL_HARDWARE) {
        expect(env.counter('executes') - executesBefore).toBe(2);
        expect(env.counter('last_batch_size')).toBe(4);
      }
    });

    it('holds model memory on both devices while serving', async () => {
      const report = await env.binding.describeDevices(env.libraryPath);
      const used = report.devices.filter((d) => d.id <= 1).map((d) => d.memoryTotal - d.memoryFree > 0);
      expect(used).toEqual([true, true]);
    });

    it('refuses a row of the wrong width before it reaches the device', async () => {
      const res = await server.app.inject({ method: 'POST', url: '/npu-add', payload: { a: [1, 2, 3], b: ones() } });
      expect(res.statusCode).toBe(422);
    });

    it.skipIf(REAL_HARDWARE)('leaves no device resources behind once the server is closed', async () => {
      await server.close();
      expect(outstanding()).toEqual(LEAK_COUNTERS.map(() => 0));
    });
  });

  describe('through a Triton repository and the KServe v2 protocol', () => {
    let server: ServeFnServer;

    beforeAll(async () => {
      const root = join(env.scratchDir, 'repository');
      mkdirSync(join(root, 'add_om', '1'), { recursive: true });
      copyFileSync(env.modelFile('add_dyn'), join(root, 'add_om', '1', 'model.om'));
      writeFileSync(join(root, 'add_om', 'config.pbtxt'), `backend: "npu_om"
        max_batch_size: 8
        instance_group [ { count: 2 gpus: [ 1 ] } ]
        dynamic_batching { preferred_batch_size: [ 3 ] max_queue_delay_microseconds: 2000000 }`);
      server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
      await server.start();
    });

    afterAll(async () => {
      await server?.close();
    });

    const infer = (k: number) =>
      server.app.inject({
        method: 'POST',
        url: '/v2/models/add_om/infer',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({
          id: `r${k}`,
          inputs: [
            { name: 'a', datatype: 'FP32', shape: [1, 4], data: row(k) },
            { name: 'b', datatype: 'FP32', shape: [1, 4], data: ones() },
          ],
        }),
      });

    it('describes the inputs and outputs it read from the OM file', async () => {
      const res = await server.app.inject({ method: 'GET', url: '/v2/models/add_om' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        name: 'add_om',
        versions: ['1'],
        platform: 'npu_om',
        inputs: [{ name: 'a', datatype: 'FP32', shape: [-1, 4] }, { name: 'b', datatype: 'FP32', shape: [-1, 4] }],
        outputs: [{ name: 'sum', datatype: 'FP32', shape: [-1, 4] }],
      });
    });

    it('answers hand-built v2 requests exactly and batches concurrent ones', async () => {
      const answers = await Promise.all(range(6, infer));
      for (const [k, res] of answers.entries()) {
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({
          id: `r${k}`,
          model_name: 'add_om',
          model_version: '1',
          outputs: [{ name: 'sum', datatype: 'FP32', shape: [1, 4], data: plusOne(k) }],
        });
      }
      const stats = (await server.app.inject({ method: 'GET', url: '/v2/models/add_om/stats' })).json();
      const model = stats.model_stats[0];
      expect([model.inference_count, model.execution_count]).toEqual([6, 2]);
      expect(model.batch_stats.map((b: { batch_size: number; compute_infer: { count: number } }) => [b.batch_size, b.compute_infer.count])).toEqual([[3, 2]]);
    });

    it.skipIf(REAL_HARDWARE)('leaves no device resources behind once the server is closed', async () => {
      await server.close();
      expect(outstanding()).toEqual(LEAK_COUNTERS.map(() => 0));
    });
  });
});
