import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/** native/find-cann-home.cjs: which CANN home binding.gyp builds serve_fn_npu_ge against, if any. */

const SCRIPT = fileURLToPath(new URL('../../native/find-cann-home.cjs', import.meta.url));
const GE_LIBRARIES = ['libge_runner.so', 'libgraph.so', 'libfmk_onnx_parser.so', 'libge_compiler.so'];
const scratch = mkdtempSync(join(tmpdir(), 'serve-fn-cann-home-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function toolkit(name: string, libraries: readonly string[]): string {
  const home = join(scratch, name);
  mkdirSync(join(home, 'lib64'), { recursive: true });
  for (const library of libraries) writeFileSync(join(home, 'lib64', library), '');
  return home;
}

function find(env: Record<string, string>): { stdout: string; stderr: string } {
  const clean = { ...process.env };
  delete clean.SERVE_FN_CANN_HOME;
  delete clean.ASCEND_HOME_PATH;
  const run = spawnSync(process.execPath, [SCRIPT], { env: { ...clean, ...env }, encoding: 'utf8' });
  expect(run.status).toBe(0);
  return { stdout: run.stdout, stderr: run.stderr };
}

describe('find-cann-home.cjs', () => {
  it('names a toolkit that has all four GE libraries, SERVE_FN_CANN_HOME before ASCEND_HOME_PATH', () => {
    const full = toolkit('full', GE_LIBRARIES);
    expect(find({ ASCEND_HOME_PATH: full })).toEqual({ stdout: full, stderr: '' });
    expect(find({ SERVE_FN_CANN_HOME: full, ASCEND_HOME_PATH: toolkit('other', GE_LIBRARIES) }).stdout).toBe(full);
  });

  it.each(GE_LIBRARIES)('skips a toolkit without %s, saying why, so the plain addon still builds', (absent) => {
    const partial = toolkit(`without-${absent}`, GE_LIBRARIES.filter((library) => library !== absent));
    expect(find({ SERVE_FN_CANN_HOME: partial })).toEqual({
      stdout: '',
      stderr: `serve-fn: not building serve_fn_npu_ge: SERVE_FN_CANN_HOME=${partial} lacks lib64/${absent}\n`,
    });
  });

  it('prints nothing and says so when no toolkit is named', () => {
    expect(find({})).toEqual({
      stdout: '',
      stderr: 'serve-fn: not building serve_fn_npu_ge: neither SERVE_FN_CANN_HOME nor ASCEND_HOME_PATH names a CANN toolkit\n',
    });
  });
});
