import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStaleSync, type StampedBuild } from './build-lock.js';

/**
 * Builds the simulated AscendCL (test/native/sim) into test/native/build with gcc: the classic
 * single libascendcl.so, the CANN 9 split pair libacl_rt.so + libacl_mdl.so, the counters reader
 * addon, the ONNX runner's test addon and the misuse-check program. Idempotent and cheap when nothing changed (a content stamp),
 * and safe when several vitest workers call it at once (build-lock.ts; outputs renamed in).
 */

export interface SimBuild {
  /** Directory holding libascendcl.so. */
  readonly fullDir: string;
  readonly fullLibrary: string;
  /** Directory holding libacl_rt.so + libacl_mdl.so (and no libascendcl.so). */
  readonly splitDir: string;
  /** The split half that carries the counters (sim_* exports). */
  readonly splitRuntimeLibrary: string;
  readonly countersAddon: string;
  /** Node addon that drives the ONNX runner (sim-onnx.h) of a library file given to it. */
  readonly onnxAddon: string;
  readonly misuseCheck: string;
  /** The ONNX Runtime the simulated ONNX runner binds: $SIM_ORT_LIBRARY (set to onnxruntime-node's when unset). */
  readonly ortLibrary: string;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const REPOSITORY = resolve(HERE, '..', '..');
const SOURCES = join(HERE, 'sim');
const BUILD = join(HERE, 'build');
const RUNTIME_SOURCES = ['sim-core.c', 'sim-device.c', 'sim-memory.c', 'sim-onnx.c', 'sim-om-encode.c'];
const MODEL_SOURCES = ['sim-model.c', 'sim-model-desc.c', 'sim-model-file.c', 'sim-model-onnx.c', 'sim-ops.c', 'sim-execute.c'];
const C_FLAGS = ['-std=c11', '-O2', '-Wall', '-Wextra', '-Werror', '-fPIC', '-pthread'];
const LIBRARY_FLAGS = [...C_FLAGS, '-shared', '-fvisibility=hidden', '-Wl,--no-undefined'];
/* The ONNX runner binds ONNX Runtime with dlopen, and rounds with libm. */
const LIBRARY_LIBS = ['-ldl', '-lm'];
const LOCK_STALE_MS = 120_000;

const OUTPUTS = {
  fullLibrary: 'ascendcl/libascendcl.so',
  splitRuntimeLibrary: 'split/libacl_rt.so',
  splitModelLibrary: 'split/libacl_mdl.so',
  countersAddon: 'sim-counters.node',
  onnxAddon: 'sim-onnx.node',
  misuseCheck: 'sim-misuse-check',
} as const;

function nodeIncludeDir(): string {
  const candidates = [resolve(dirname(process.execPath), '..', 'include', 'node')];
  if (process.env.npm_config_nodedir) candidates.push(join(process.env.npm_config_nodedir, 'include', 'node'));
  const found = candidates.find((dir) => existsSync(join(dir, 'node_api.h')));
  if (!found) throw new Error(`node_api.h not found in ${candidates.join(', ')}: install the Node.js headers`);
  return found;
}

function sourceStamp(): string {
  const hash = createHash('sha256').update(JSON.stringify([C_FLAGS, LIBRARY_FLAGS, process.version]));
  for (const file of readdirSync(SOURCES).filter((f) => /\.[ch]$/.test(f)).sort()) {
    hash.update(file).update(readFileSync(join(SOURCES, file)));
  }
  return hash.digest('hex');
}

/**
 * The libonnxruntime.so.1 that onnxruntime-node ships (bin/napi-v6/linux/<arch>/), which the tests
 * also compare against. The C side only reads SIM_ORT_LIBRARY, so the library never guesses paths.
 */
export function onnxRuntimeLibrary(): string {
  const arch = process.arch === 'x64' ? 'x64' : process.arch === 'arm64' ? 'arm64' : undefined;
  if (!arch) throw new Error(`onnxruntime-node ships no Linux library for ${process.arch}`);
  const file = join(REPOSITORY, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux', arch, 'libonnxruntime.so.1');
  if (!existsSync(file)) throw new Error(`${file} is missing: the simulated ONNX runner needs onnxruntime-node's ONNX Runtime`);
  return file;
}

function result(): SimBuild {
  return {
    fullDir: join(BUILD, 'ascendcl'),
    fullLibrary: join(BUILD, OUTPUTS.fullLibrary),
    splitDir: join(BUILD, 'split'),
    splitRuntimeLibrary: join(BUILD, OUTPUTS.splitRuntimeLibrary),
    countersAddon: join(BUILD, OUTPUTS.countersAddon),
    onnxAddon: join(BUILD, OUTPUTS.onnxAddon),
    misuseCheck: join(BUILD, OUTPUTS.misuseCheck),
    ortLibrary: process.env.SIM_ORT_LIBRARY as string,
  };
}

function stamped(stamp: string): StampedBuild {
  return {
    lock: join(BUILD, '.lock'),
    staleMs: LOCK_STALE_MS,
    stampFile: join(BUILD, '.stamp'),
    stamp,
    outputs: Object.values(OUTPUTS).map((output) => join(BUILD, output)),
  };
}

function gcc(args: readonly string[]): void {
  try {
    execFileSync('gcc', args, { stdio: 'pipe' });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? String(err);
    throw new Error(`gcc ${args.join(' ')} failed:\n${stderr}`);
  }
}

function compile(tmp: string): void {
  const src = (files: readonly string[]) => files.map((f) => join(SOURCES, f));
  for (const dir of ['ascendcl', 'split']) mkdirSync(join(tmp, dir), { recursive: true });
  gcc([...LIBRARY_FLAGS, '-Wl,-soname,libascendcl.so', '-o', join(tmp, OUTPUTS.fullLibrary), ...src([...RUNTIME_SOURCES, ...MODEL_SOURCES]), ...LIBRARY_LIBS]);
  gcc([...LIBRARY_FLAGS, '-Wl,-soname,libacl_rt.so', '-o', join(tmp, OUTPUTS.splitRuntimeLibrary), ...src(RUNTIME_SOURCES), ...LIBRARY_LIBS]);
  gcc([
    ...LIBRARY_FLAGS, '-Wl,-soname,libacl_mdl.so', '-Wl,-rpath,$ORIGIN', '-o', join(tmp, OUTPUTS.splitModelLibrary),
    ...src(MODEL_SOURCES), `-L${join(tmp, 'split')}`, '-l:libacl_rt.so',
  ]);
  for (const [output, source] of [[OUTPUTS.countersAddon, 'sim-counters-addon.c'], [OUTPUTS.onnxAddon, 'sim-onnx-addon.c']]) {
    gcc([...C_FLAGS, '-shared', `-I${nodeIncludeDir()}`, '-o', join(tmp, output), join(SOURCES, source), '-ldl']);
  }
  gcc([
    ...C_FLAGS, '-o', join(tmp, OUTPUTS.misuseCheck), join(SOURCES, 'sim-misuse-check.c'),
    `-L${join(tmp, 'ascendcl')}`, '-l:libascendcl.so', '-Wl,-rpath,$ORIGIN/ascendcl',
  ]);
}

/**
 * Builds what is missing or stale and returns where everything is. Sets SIM_ORT_LIBRARY to
 * onnxRuntimeLibrary() when it is unset, so this process, its workers and its children find it.
 */
export function buildSimulatedAcl(): SimBuild {
  process.env.SIM_ORT_LIBRARY ||= onnxRuntimeLibrary();
  buildIfStaleSync(stamped(sourceStamp()), () => {
    const tmp = join(BUILD, `.tmp-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    try {
      compile(tmp);
      for (const output of Object.values(OUTPUTS)) {
        mkdirSync(dirname(join(BUILD, output)), { recursive: true });
        renameSync(join(tmp, output), join(BUILD, output));
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
  return result();
}
