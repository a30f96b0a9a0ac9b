import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSimulatedAcl } from '../native/build-sim.js';
import { REPO_ROOT, startCli } from './cli-harness.js';

const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };

describe('serve-fn doctor', () => {
  it("reports serve-fn's version, ONNX Runtime, and why the NPU is not available, naming the paths tried", async () => {
    const cli = await startCli(['doctor'], { SERVE_FN_ACL_LIBRARY: '/nowhere/libascendcl.so', ASCEND_HOME_PATH: '', LD_LIBRARY_PATH: '' });
    expect(await cli.waitForExit()).toBe(0);
    expect(cli.output()).toMatch(new RegExp(`^serve-fn ${version.replaceAll('.', '\\.')}$`, 'm'));
    expect(cli.output()).toMatch(/^ONNX Runtime 1\.\d+\.\d+: available; execution providers: cpu/m);
    expect(cli.output()).toMatch(/^Ascend NPU: not available \(.*\/nowhere\/libascendcl\.so/m);
  });

  it('reports AscendCL devices and memory through the simulated library', async () => {
    const sim = buildSimulatedAcl();
    const cli = await startCli(['doctor', '--json'], { SERVE_FN_ACL_LIBRARY: sim.fullLibrary, ACL_SIM_DEVICE_COUNT: '2', ACL_SIM_DEVICE_MEMORY_MB: '1024' });
    expect(await cli.waitForExit()).toBe(0);
    const report = JSON.parse(cli.output()) as { serveFn: string; onnxruntime: { available: boolean }; npu: { available: boolean; deviceCount: number; devices: { id: number; memoryTotal: number }[]; libraryPath: string } };
    expect(report.serveFn).toBe(version);
    expect(report.onnxruntime.available).toBe(true);
    expect(report.npu).toMatchObject({ available: true, deviceCount: 2, libraryPath: sim.fullLibrary });
    expect(report.npu.devices.map((d) => [d.id, d.memoryTotal])).toEqual([[0, 1024 * 2 ** 20], [1, 1024 * 2 ** 20]]);
  });
});
