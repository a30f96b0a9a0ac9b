import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStaleSync, type StampedBuild } from './build-lock.js';
import { buildSimulatedAcl } from './build-sim.js';

/**
 * Builds a simulated CANN 8.5.0 home in test/native/build/cann: the simulated AscendCL
 * (build-sim.ts, copied) and the simulated GE libraries of test/native/sim-ge, with the real
 * sonames, compiled with g++ and the old libstdc++ ABI as CANN is. Idempotent and safe when
 * several vitest workers call it at once (build-lock.ts); the home is built in a directory of its
 * own and renamed into place, so a process that holds its libraries open never sees one half-written.
 */

export interface SimCann {
  /** The CANN home (ASCEND_HOME_PATH / SERVE_FN_CANN_HOME for the addon build). */
  readonly home: string;
  readonly lib64: string;
  /** lib64/libascendcl.so: its counters are AscendCL's (device memory, streams…). */
  readonly aclLibrary: string;
  /** lib64/libge_runner.so: its sim_counter reads the GE counters. */
  readonly geRunnerLibrary: string;
  /** The C++ program that drives the GE libraries through each rule (sim-ge.test.ts). */
  readonly geCheck: string;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const SOURCES = join(HERE, 'sim-ge');
const ACL_SOURCES = join(HERE, 'sim');
const BUILD = join(HERE, 'build');
const HOME = join(BUILD, 'cann');
const VERSION = '8.5.0';
const LOCK_STALE_MS = 300_000;

const CXX_FLAGS = ['-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror', '-fPIC', '-pthread', '-D_GLIBCXX_USE_CXX11_ABI=0'];
/* The version script keeps the exports to the GE API and the sim_* hooks (no std:: instantiations). */
const LIBRARY_FLAGS = [
  ...CXX_FLAGS, '-shared', '-fvisibility=hidden', '-Wl,--no-undefined', '-Wl,--no-as-needed', '-Wl,-rpath,$ORIGIN',
  `-Wl,--version-script=${join(SOURCES, 'exports.map')}`,
];

/** Each library with its sources; every one links libascendcl.so, and all but libgraph link libgraph. */
const LIBRARIES: Record<string, readonly string[]> = {
  'libgraph.so': ['ge-sim-ascend-string.cc', 'ge-sim-state.cc'],
  'libfmk_onnx_parser.so': ['ge-sim-parser.cc', 'ge-sim-options.cc'],
  'libge_runner.so': ['ge-sim-session.cc', 'ge-sim-execute.cc', 'ge-sim-acl.cc', 'ge-sim-options.cc'],
  'libge_compiler.so': ['ge-sim-compiler.cc', 'ge-sim-options.cc'],
};
const CHECK = 'sim-ge-check';
const CHECK_SOURCES = ['sim-ge-check.cc', 'sim-ge-check-build.cc', 'sim-ge-check-concurrency.cc'];

function result(): SimCann {
  const lib64 = join(HOME, 'lib64');
  return {
    home: HOME,
    lib64,
    aclLibrary: join(lib64, 'libascendcl.so'),
    geRunnerLibrary: join(lib64, 'libge_runner.so'),
    geCheck: join(HOME, CHECK),
  };
}

function sourceStamp(aclLibrary: string): string {
  const hash = createHash('sha256').update(JSON.stringify([CXX_FLAGS, LIBRARY_FLAGS, LIBRARIES, process.version]));
  for (const file of readdirSync(SOURCES).filter((f) => /\.(h|cc|map)$/.test(f)).sort()) {
    hash.update(file).update(readFileSync(join(SOURCES, file)));
  }
  return hash.update(readFileSync(aclLibrary)).digest('hex');
}

function stamped(stamp: string): StampedBuild {
  const { lib64, geCheck } = result();
  return {
    lock: join(BUILD, '.cann-lock'),
    staleMs: LOCK_STALE_MS,
    stampFile: join(HOME, '.stamp'),
    stamp,
    outputs: [...[...Object.keys(LIBRARIES), 'libascendcl.so'].map((lib) => join(lib64, lib)), geCheck],
  };
}

function gxx(args: readonly string[]): void {
  try {
    execFileSync('g++', args, { stdio: 'pipe' });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? String(err);
    throw new Error(`g++ ${args.join(' ')} failed:\n${stderr}`);
  }
}

function compile(home: string, aclLibrary: string): void {
  const lib64 = join(home, 'lib64');
  mkdirSync(lib64, { recursive: true });
  copyFileSync(aclLibrary, join(lib64, 'libascendcl.so'));
  const includes = [`-I${SOURCES}`, `-I${ACL_SOURCES}`];
  for (const [library, sources] of Object.entries(LIBRARIES)) {
    const links = library === 'libgraph.so' ? [] : ['-l:libgraph.so'];
    gxx([
      ...LIBRARY_FLAGS, `-Wl,-soname,${library}`, ...includes, '-o', join(lib64, library),
      ...sources.map((file) => join(SOURCES, file)), `-L${lib64}`, ...links, '-l:libascendcl.so',
    ]);
  }
  gxx([
    ...CXX_FLAGS, ...includes, '-o', join(home, CHECK), ...CHECK_SOURCES.map((file) => join(SOURCES, file)), `-L${lib64}`,
    ...Object.keys(LIBRARIES).map((library) => `-l:${library}`), '-l:libascendcl.so', '-ldl', '-Wl,-rpath,$ORIGIN/lib64',
  ]);
  const info = ['package_name=Ascend-cann-toolkit', `version=${VERSION}`, `arch=${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}`, 'os=linux'];
  writeFileSync(join(home, 'ascend_toolkit_install.info'), `${info.join('\n')}\n# simulated by serve-fn test/native/sim-ge\n`);
  writeFileSync(join(home, 'version.cfg'), `version=${VERSION}\n# simulated by serve-fn test/native/sim-ge\n`);
}

/** Builds what is missing or stale and returns where the simulated CANN home is. */
export function buildSimCann(): SimCann {
  const acl = buildSimulatedAcl();
  buildIfStaleSync(stamped(sourceStamp(acl.fullLibrary)), () => {
    const built = join(BUILD, `.cann-${process.pid}`);
    rmSync(built, { recursive: true, force: true });
    try {
      compile(built, acl.fullLibrary);
      rmSync(HOME, { recursive: true, force: true });
      renameSync(built, HOME);
    } finally {
      rmSync(built, { recursive: true, force: true });
    }
  });
  return result();
}
