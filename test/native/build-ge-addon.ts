import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildIfStale } from './build-lock.js';
import { buildSimCann, type SimCann } from './build-sim-ge.js';

/**
 * Builds the GE addon (target serve_fn_npu_ge of native/binding.gyp) against the simulated CANN
 * home into test/native/build/ge-addon: a copy of native/{binding.gyp, find-cann-home.cjs, src}
 * configured by node-gyp with SERVE_FN_CANN_HOME set, so the test build and `npm run build:native`
 * share one build definition, and native/build keeps the plain addon. Idempotent and cheap when
 * nothing changed (a content stamp over the sources and the simulated libraries; make is
 * incremental underneath: see mirror()), and safe when several vitest workers call it at once (build-lock.ts,
 * as the simulation builds). Asynchronous, unlike the simulation builds: compiling the addon
 * takes a minute, and a blocked event loop would starve vitest's worker RPC meanwhile.
 */

export interface GeAddonBuild {
  /** The built serve_fn_npu_ge.node. */
  readonly addon: string;
  readonly cann: SimCann;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const NATIVE = resolve(HERE, '..', '..', 'native');
const BUILD = join(HERE, 'build');
const OUT = join(BUILD, 'ge-addon');
const TARGET = 'serve_fn_npu_ge';
const ADDON = join(OUT, 'build', 'Release', `${TARGET}.node`);
const COPIED = ['binding.gyp', 'find-cann-home.cjs', 'src'];
const LOCK_STALE_MS = 300_000;

/** The node-gyp npm ships (what `npm run build:native` runs), else one on PATH. */
function nodeGyp(): string[] {
  const bundled = resolve(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  return existsSync(bundled) ? [process.execPath, bundled] : ['node-gyp'];
}

/** node-gyp must not download headers (tests run offline): point it at the installed ones. */
function nodeDir(): string {
  const candidates = [resolve(dirname(process.execPath), '..'), process.env.npm_config_nodedir].filter((dir): dir is string => !!dir);
  const found = candidates.find((dir) => existsSync(join(dir, 'include', 'node', 'node_api.h')));
  if (!found) throw new Error(`node_api.h not found under ${candidates.join(', ')}: install the Node.js headers`);
  return found;
}

// Taken before the copy: a source edited in between is built from its newer bytes under the older
// stamp, so the next call builds again (never the reverse: a stamp newer than what was built).
function stamp(cann: SimCann): string {
  const hash = createHash('sha256').update(process.version).update(cann.home);
  const add = (file: string) => hash.update(file).update(readFileSync(file));
  add(join(NATIVE, 'binding.gyp'));
  add(join(NATIVE, 'find-cann-home.cjs'));
  for (const file of readdirSync(join(NATIVE, 'src')).sort()) add(join(NATIVE, 'src', file));
  for (const file of readdirSync(cann.lib64).filter((f) => f.endsWith('.so')).sort()) add(join(cann.lib64, file));
  return hash.digest('hex');
}

const execFileAsync = promisify(execFile);

async function run(command: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  try {
    await execFileAsync(command[0]!, command.slice(1), { cwd, env, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const { stdout = '', stderr = String(err) } = err as { stdout?: string; stderr?: string };
    throw new Error(`${command.join(' ')} failed in ${cwd}:\n${stdout}${stderr}`);
  }
}

/**
 * Makes `to` a copy of `from` by content: a file whose bytes differ is written anew (its mtime is
 * now, later than any object built from its older bytes, so make recompiles it), an identical one
 * is left alone (make keeps its object), and one gone from `from` goes. Copying with the sources'
 * own mtimes instead let a file edited while an earlier build ran look older than its object, and
 * make linked a mix of old and new objects.
 */
export function mirror(from: string, to: string): void {
  if (statSync(from).isDirectory()) {
    mkdirSync(to, { recursive: true });
    const names = readdirSync(from);
    for (const name of readdirSync(to)) if (!names.includes(name)) rmSync(join(to, name), { recursive: true, force: true });
    for (const name of names) mirror(join(from, name), join(to, name));
    return;
  }
  const bytes = readFileSync(from);
  const current = statSync(to, { throwIfNoEntry: false });
  if (current?.isDirectory()) rmSync(to, { recursive: true, force: true });
  if (!current?.isFile() || !readFileSync(to).equals(bytes)) writeFileSync(to, bytes);
}

async function compile(cann: SimCann): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  for (const entry of COPIED) mirror(join(NATIVE, entry), join(OUT, entry));
  const env: NodeJS.ProcessEnv = { ...process.env, SERVE_FN_CANN_HOME: cann.home };
  delete env.ASCEND_HOME_PATH;
  await run([...nodeGyp(), 'configure', `--nodedir=${nodeDir()}`], OUT, env);
  // Only the GE target: the plain one is native/build's, and building it again here costs minutes.
  await run(['make', '-C', 'build', '-j2', 'BUILDTYPE=Release', TARGET], OUT, env);
  if (!existsSync(ADDON)) throw new Error(`node-gyp reported success but ${ADDON} is missing`);
}

/** Builds what is missing or stale and returns where the addon and the simulated CANN home are. */
export async function buildGeAddon(): Promise<GeAddonBuild> {
  const cann = buildSimCann();
  const build = {
    lock: join(BUILD, '.ge-addon-lock'),
    staleMs: LOCK_STALE_MS,
    stampFile: join(OUT, '.stamp'),
    stamp: stamp(cann),
    outputs: [ADDON],
  };
  await buildIfStale(build, () => compile(cann));
  return { addon: ADDON, cann };
}
