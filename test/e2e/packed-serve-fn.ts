import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { REPO_ROOT } from './cli-harness.js';

const run = promisify(execFile);

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
      writeFileSync(done, await pack(dir));
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

// Asynchronous throughout: a worker blocked for the minutes a pack takes misses vitest's RPC deadlines.
async function pack(dir: string): Promise<string> {
  const copy = join(dir, 'checkout');
  mkdirSync(copy);
  const { stdout: listing } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO_ROOT, maxBuffer: 1 << 26 });
  const files = listing
    .split('\0')
    .filter((f) => f !== '' && existsSync(join(REPO_ROOT, f)));
  const listFile = join(dir, 'files');
  writeFileSync(listFile, files.join('\0'));
  await run('tar', ['-c', '--null', '-T', listFile, '-f', join(dir, 'checkout.tar')], { cwd: REPO_ROOT });
  await run('tar', ['-x', '-f', join(dir, 'checkout.tar'), '-C', copy]);
  rmSync(join(dir, 'checkout.tar'));
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  try {
    const { stdout, stderr } = await run('npm', ['pack', '--pack-destination', dir], { cwd: copy, maxBuffer: 1 << 28 });
    writeFileSync(join(dir, 'pack.log'), `${stdout}${stderr}`);
  } catch (err) {
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    writeFileSync(join(dir, 'pack.log'), `${stdout}${stderr}`);
    throw err;
  }
  const filename = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  await rm(copy, { recursive: true, force: true });
  return filename;
}
