import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NpuBackend } from '../../src/backends/npu/npu-backend.js';
import { MISSING_DEVICE, REAL_HARDWARE, TEST_DEVICES, f32, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';
import { serveFnFailure } from '../helpers/thrown.js';

describe('NpuBackend on AscendCL', () => {
  let env: NpuTestEnv;
  let backend: NpuBackend;

  beforeAll(() => {
    env = setUpNpuTests();
    backend = new NpuBackend({ libraryPath: env.libraryPath });
  });
  afterAll(() => env.cleanup());

  it('is available and serves a dynamic-batch model with KServe datatypes', async () => {
    expect(await backend.available()).toBe(true);
    const session = await backend.load(env.modelFile('add_dyn'), { device: { kind: 'npu', id: TEST_DEVICES.at(-1)! } });
    const outputName = session.metadata().outputs[0]!.name;
    expect(session.backend).toBe('npu_om');
    expect(session.metadata()).toEqual({
      inputs: [{ name: 'a', datatype: 'FP32', shape: [-1, 4] }, { name: 'b', datatype: 'FP32', shape: [-1, 4] }],
      outputs: [{ name: REAL_HARDWARE ? outputName : 'sum', datatype: 'FP32', shape: [-1, 4] }],
      batchSizes: [1, 4, 8],
    });
    const a = { name: 'a', datatype: 'FP32', shape: [3, 4], data: f32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11) } as const;
    const b = { name: 'b', datatype: 'FP32', shape: [3, 4], data: new Float32Array(12).fill(-1) } as const;
    expect(await session.run({ a, b })).toEqual({
      [outputName]: { name: outputName, datatype: 'FP32', shape: [3, 4], data: f32(-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10) },
    });
    if (!REAL_HARDWARE) expect(env.counter('last_batch_size')).toBe(4);
    expect(await session.run({ a, b }, [])).toEqual({});
    await session.dispose();
  });

  it('loads from bytes and keeps INT32 data as Int32Array', async () => {
    const session = await backend.load(readFileSync(env.modelFile('add_int32')));
    const outputs = await session.run({
      a: { name: 'a', datatype: 'INT32', shape: [4], data: new Int32Array([1, 2, 3, 4]) },
      b: { name: 'b', datatype: 'INT32', shape: [4], data: new Int32Array([-1, 40, 300, 2000]) },
    });
    expect(Object.values(outputs)[0]!.data).toEqual(new Int32Array([0, 42, 303, 2004]));
    expect(Object.values(outputs)[0]!.shape).toEqual([4]);
    await session.dispose();
  });

  it('turns AscendCL failures into SF_ERR_NPU_ACL', async () => {
    const error = await serveFnFailure(backend.load(env.modelFile('add_dyn'), { device: { kind: 'npu', id: MISSING_DEVICE } }));
    expect(error.code).toBe('SF_ERR_NPU_ACL');
    expect(error.statusCode).toBe(500);
    expect(error.message).toMatch(/^aclrtSetDevice failed with ACL error \d+: /);
    if (!REAL_HARDWARE) {
      expect(error.message).toBe(
        'aclrtSetDevice failed with ACL error 107001: [sim 107001] aclrtSetDevice: device 63 does not exist (2 simulated devices)',
      );
    }
  });

  it('checks tensors against the model and refuses to run after dispose', async () => {
    const session = await backend.load(env.modelFile('add_dyn'));
    const nine = { name: 'a', datatype: 'FP32', shape: [9, 4], data: new Float32Array(36) } as const;
    const shape = await serveFnFailure(session.run({ a: nine, b: { ...nine, name: 'b' } }));
    expect([shape.code, shape.message]).toEqual(['SF_ERR_TENSOR_SHAPE', "Tensor 'a': expected shape [1..8, 4], got [9, 4]."]);
    await session.dispose();
    const disposed = await serveFnFailure(session.run({}));
    expect([disposed.code, disposed.message]).toEqual([
      'SF_ERR_BACKEND_RUN_FAILED',
      "Backend 'npu_om' failed to run 'add_dyn.om': the session has been disposed",
    ]);
  });

  it('reports the paths it tried when AscendCL is not there', async () => {
    const missing = join(env.scratchDir, 'no-cann');
    const absent = new NpuBackend({ libraryPath: missing });
    const reason = `AscendCL library not found; tried ${missing}: cannot open shared object file: No such file or directory. Install CANN and source its set_env.sh (it sets ASCEND_HOME_PATH and LD_LIBRARY_PATH), or set SERVE_FN_ACL_LIBRARY to libascendcl.so or its directory.`;
    expect(await absent.available()).toBe(reason);
    const error = await serveFnFailure(absent.load(env.modelFile('add_dyn')));
    expect([error.code, error.statusCode, error.message]).toEqual([
      'SF_ERR_NPU_UNAVAILABLE', 501, `Ascend NPU backend is not available: ${reason}`,
    ]);
  });
});
