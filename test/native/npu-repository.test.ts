import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACL_LIBRARY_ENV } from '../../src/backends/npu/npu-library.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import { TEST_DEVICES, f32, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';

describe('an npu_om model in a Triton repository', () => {
  let env: NpuTestEnv;
  let server: ServeFnServer;
  let previousLibrary: string | undefined;

  beforeAll(async () => {
    env = setUpNpuTests();
    previousLibrary = process.env[ACL_LIBRARY_ENV];
    // Instance threads find AscendCL the way production does.
    if (env.libraryPath) process.env[ACL_LIBRARY_ENV] = env.libraryPath;
    const root = join(env.scratchDir, 'repository');
    mkdirSync(join(root, 'add_om', '1'), { recursive: true });
    copyFileSync(env.modelFile('add_dyn'), join(root, 'add_om', '1', 'model.om'));
    writeFileSync(join(root, 'add_om', 'config.pbtxt'), `backend: "npu_om"
      max_batch_size: 8
      instance_group [ { count: 1 gpus: [ ${TEST_DEVICES.at(-1)} ] } ]
      dynamic_batching { preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 5000000 }`);
    server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
    await server.start();
  });

  afterAll(async () => {
    await server?.close();
    if (previousLibrary === undefined) delete process.env[ACL_LIBRARY_ENV];
    else process.env[ACL_LIBRARY_ENV] = previousLibrary;
    env?.cleanup();
  });

  it('completes its configuration from the OM file and batches requests into one execution', async () => {
    const model = server.repository!.get('add_om');
    expect(model.info).toMatchObject({ platform: 'npu_om', maxBatchSize: 8, inputs: [{ name: 'a', datatype: 'FP32', shape: [4] }, { name: 'b', datatype: 'FP32', shape: [4] }] });
    const output = model.info.outputs[0].name;
    const request = (rows: number, base: number) => ({
      inputs: [
        createTensor('a', 'FP32', [rows, 4], f32(...Array.from({ length: rows * 4 }, (_, i) => base + i))),
        createTensor('b', 'FP32', [rows, 4], new Float32Array(rows * 4).fill(1)),
      ],
    });
    const [one, two] = await Promise.all([model.infer(request(1, 0)), model.infer(request(2, 10))]);
    expect(one.outputs).toEqual([{ name: output, datatype: 'FP32', shape: [1, 4], data: f32(1, 2, 3, 4) }]);
    expect(two.outputs).toEqual([{ name: output, datatype: 'FP32', shape: [2, 4], data: f32(11, 12, 13, 14, 15, 16, 17, 18) }]);
    expect(server.recorder.statistics('add_om', '1').model_stats[0].execution_count).toBe(1);
  });
});
