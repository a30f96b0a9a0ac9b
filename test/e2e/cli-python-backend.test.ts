import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli } from './cli-harness.js';

const tmp = join(REPO_ROOT, 'test', '.tmp', `cli-python-backend-${process.pid}`);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const usable = spawnSync('python3', ['-c', 'import numpy']).status === 0;

describe.skipIf(!usable)(`serve-fn start <repository with a Python backend model>${usable ? '' : ' (skipped: python3 with numpy is missing)'}`, () => {
  it('serves model.py over HTTP and runs finalize on SIGTERM before exiting 0', async () => {
    const repo = join(tmp, 'repo');
    cpSync(join(REPO_ROOT, 'test/fixtures/python-backend/pb_stream'), join(repo, 'pb_stream'), { recursive: true });
    const cli = await startCli(['start', repo, '--host', '127.0.0.1']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      const res = await fetch(`${cli.base}/v2/models/pb_stream/generate_stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"N":1}' });
      expect(await res.text()).toBe('data: {"model_name":"pb_stream","model_version":"1","OUT":0}\n\n');
    } finally {
      expect(await cli.stop()).toBe(0);
    }
    expect(readFileSync(join(repo, 'pb_stream', 'finalized-pb_stream_0'), 'utf8')).toBe('finalized');
  });
});
