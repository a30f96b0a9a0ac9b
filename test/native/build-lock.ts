import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The one guard the test builds (build-sim.ts, build-sim-ge.ts, build-ge-addon.ts) share: a content
 * stamp says whether the outputs are current, and a lock directory (mkdir is atomic) lets one vitest
 * worker build while the others wait and then find the stamp current. A lock older than staleMs is
 * taken as left behind by a killed process.
 */
export interface StampedBuild {
  /** The lock directory. */
  readonly lock: string;
  readonly staleMs: number;
  /** Written with `stamp` once the build finished, removed before it starts. */
  readonly stampFile: string;
  /** A digest of everything the outputs are made from. */
  readonly stamp: string;
  /** Every file the build makes; one missing and the build runs again. */
  readonly outputs: readonly string[];
}

export function isCurrent(build: StampedBuild): boolean {
  return (
    existsSync(build.stampFile) &&
    readFileSync(build.stampFile, 'utf8') === build.stamp &&
    build.outputs.every((output) => existsSync(output))
  );
}

function tryLock(build: StampedBuild): boolean {
  mkdirSync(dirname(build.lock), { recursive: true });
  try {
    mkdirSync(build.lock);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const held = statSync(build.lock, { throwIfNoEntry: false });
    if (held && Date.now() - held.mtimeMs > build.staleMs) rmSync(build.lock, { recursive: true, force: true });
    return false;
  }
}

function started(build: StampedBuild): boolean {
  if (isCurrent(build)) return false;
  rmSync(build.stampFile, { force: true });
  return true;
}

function finished(build: StampedBuild): void {
  writeFileSync(build.stampFile, build.stamp);
}

const POLL_MS = 50;

/** Runs `make` unless the outputs are current; for the builds that run inside a synchronous call. */
export function buildIfStaleSync(build: StampedBuild, make: () => void): void {
  if (isCurrent(build)) return;
  while (!tryLock(build)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, POLL_MS);
  try {
    if (started(build)) {
      make();
      finished(build);
    }
  } finally {
    rmSync(build.lock, { recursive: true, force: true });
  }
}

/**
 * The same for a build that awaits its compiler, so the event loop (and vitest's worker RPC) keeps
 * running while it waits.
 */
export async function buildIfStale(build: StampedBuild, make: () => Promise<void>): Promise<void> {
  if (isCurrent(build)) return;
  while (!tryLock(build)) await new Promise((done) => setTimeout(done, POLL_MS));
  try {
    if (started(build)) {
      await make();
      finished(build);
    }
  } finally {
    rmSync(build.lock, { recursive: true, force: true });
  }
}
