import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './cli-harness.js';

/**
 * `npm pack` of this working tree, made once per test run and shared by the test files that
 * install serve-fn as a user does. It packs a copy (tracked and untracked, unignored files, with
 * node_modules linked) because prepack rebuilds native/build, which other tests load meanwhile.
 * Test files run in worker processes of one vitest process, so their parent's pid names the run;
 * the first to create the folder packs, the others wait for the tarball it leaves.
 */
export async function packedServeFn(): Promise<string> {
  const dir = join(REPO_ROOT, 'test', '.tmp', `packed-serve-fn-${process.ppid}`);
  const done = join(dir, 'tarball');
  mkdirSync(dirname(dir), { recursive: true });
  let owner = true;
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    owner = false;
  }
  if (owner) {
    try {
      writeFileSync(done, pack(dir));
    } catch (err) {
      writeFileSync(join(dir, 'failed'), String((err as Error).message));
      throw err;
    }
  }
  for (;;) {
    if (existsSync(join(dir, 'failed'))) throw new Error(`npm pack failed in another test file: ${readFileSync(join(dir, 'failed'), 'utf8')}; its output is in ${dir}/pack.log`);
    if (existsSync(done)) return join(dir, readFileSync(done, 'utf8'));
    await sleep(1000);
  }
}

function pack(dir: string): string {
  const copy = join(dir, 'checkout');
  mkdirSync(copy);
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(REPO_ROOT, f)));
  execFileSync('sh', ['-c', `tar -c --null -T - -f - | tar -x -C '${copy}'`], { cwd: REPO_ROOT, input: files.join('\0') });
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  const log = openSync(join(dir, 'pack.log'), 'w');
  try {
    execFileSync('npm', ['pack', '--pack-destination', dir], { cwd: copy, stdio: ['ignore', log, log] });
  } finally {
    closeSync(log);
  }
  const filename = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  rmSync(copy, { recursive: true, force: true });
  return filename;
}
