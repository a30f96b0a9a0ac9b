import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { describeNpu } from '../../src/cli/doctor-npu.js';
import { REAL_HARDWARE, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';

const GIB = 1024 ** 3;

describe.skipIf(REAL_HARDWARE)('describeNpu against the simulation', () => {
  let env: NpuTestEnv;

  beforeAll(() => {
    env = setUpNpuTests();
  });
  afterEach(() => {
    delete process.env.SERVE_FN_ACL_LIBRARY;
  });
  afterAll(() => env.cleanup());

  it('reports the library, its version and every device with its memory', async () => {
    process.env.SERVE_FN_ACL_LIBRARY = env.sim!.fullDir;
    expect(await describeNpu()).toEqual({
      available: true,
      libraryPath: env.sim!.fullLibrary,
      version: '1.0.0',
      deviceCount: 2,
      devices: [
        { id: 0, memoryTotal: GIB, memoryFree: GIB },
        { id: 1, memoryTotal: GIB, memoryFree: GIB },
      ],
    });
  });

  it('says why the NPU is not available', async () => {
    const missing = join(env.scratchDir, 'none');
    const report = await describeNpu({ libraryPath: missing });
    expect(report.available).toBe(false);
    expect(report.reason).toContain(`tried ${missing}: cannot open shared object file`);
  });
});
