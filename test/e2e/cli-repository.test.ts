import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli } from './cli-harness.js';

const tmp = join(REPO_ROOT, 'test', '.tmp', `cli-repository-${process.pid}`);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('serve-fn start <Triton model repository>', () => {
  it('serves every model of the repository and lists them', async () => {
    const cli = await startCli(['start', 'examples/triton-repository/models', '--host', '127.0.0.1', '--dev']);
    try {
      await cli.waitForOutput(/serve-fn ready at/);
      await cli.waitForOutput(/model\s+scale version 1 \(serve-fn\)/);
      expect(cli.output()).toMatch(/model\s+add_sub version 1 \(onnxruntime_onnx\)/);
      expect(cli.output()).toMatch(/model\s+add_sub_scaled version 1 \(ensemble\)/);
      expect((await fetch(`${cli.base}/health/ready`)).status).toBe(200);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });

  it('loads only the --load-model models in explicit mode', async () => {
    const cli = await startCli(['start', 'examples/triton-repository/models', '--host', '127.0.0.1', '--dev', '--model-control-mode', 'explicit', '--load-model', 'add_sub']);
    try {
      await cli.waitForOutput(/model\s+add_sub version 1/);
      expect(cli.output()).not.toMatch(/model\s+scale/);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });

  it('exits 1 with the error when a model cannot be served', async () => {
    mkdirSync(join(tmp, 'repo', 'graph', '1'), { recursive: true });
    writeFileSync(join(tmp, 'repo', 'graph', 'config.pbtxt'), 'backend: "tensorrt"');
    const cli = await startCli(['start', join(tmp, 'repo'), '--host', '127.0.0.1']);
    expect(await cli.waitForExit()).toBe(1);
    expect(cli.output()).toContain("serve-fn: Backend 'tensorrt' is not supported yet: model 'graph': serve-fn serves onnxruntime, npu_om, npu_ge");
  });
});
