import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
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

  it('refuses to start a model asking for more instances than --max-instances or SERVE_FN_MAX_INSTANCES allow, naming the ceiling', async () => {
    const models = join(tmp, 'two-instances');
    mkdirSync(join(models, 'add_sub'), { recursive: true });
    writeFileSync(join(models, 'add_sub', 'config.pbtxt'), 'backend: "onnxruntime"\ninstance_group [ { count: 2 kind: KIND_CPU } ]');
    cpSync(join(REPO_ROOT, 'examples/triton-repository/models/add_sub/1'), join(models, 'add_sub', '1'), { recursive: true });
    const reason = "Model configuration for 'add_sub' is invalid: instance_group asks for 2 instances (2); this server runs at most 1 per model version";
    const byFlag = await startCli(['start', models, '--host', '127.0.0.1', '--max-instances', '1']);
    expect(await byFlag.waitForExit()).toBe(1);
    expect(byFlag.output()).toContain(reason);
    const byEnv = await startCli(['start', models, '--host', '127.0.0.1'], { SERVE_FN_MAX_INSTANCES: '1' });
    expect(await byEnv.waitForExit()).toBe(1);
    expect(byEnv.output()).toContain(reason);
  });

  it('refuses to start with a malformed SERVE_FN_RESTART_LIMIT', async () => {
    const cli = await startCli(['start', 'examples/triton-repository/models', '--host', '127.0.0.1'], { SERVE_FN_RESTART_LIMIT: 'often' });
    expect(await cli.waitForExit()).toBe(1);
    expect(cli.output()).toContain("Environment variable SERVE_FN_RESTART_LIMIT is invalid: expected '<restarts>/<window>'");
  });
});

describe('serve-fn start <decorated models> --model-control-mode explicit', () => {
  it('answers a load or unload of its own model 400, as documented, not the 503 of a server that controls nothing', async () => {
    const cli = await startCli(['start', 'test/fixtures/cli/greeter-model.ts', '--host', '127.0.0.1', '--model-control-mode', 'explicit']);
    try {
      await cli.waitForOutput(/serve-fn ready/);
      for (const action of ['load', 'unload']) {
        const res = await fetch(`${cli.base}/v2/repository/models/greeter/${action}`, { method: 'POST' });
        expect([res.status, ((await res.json()) as { code: string }).code], action).toEqual([400, 'SF_ERR_MODEL_NOT_IN_REPOSITORY']);
      }
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });
});

