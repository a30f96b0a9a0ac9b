import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packedServeFn } from './packed-serve-fn.js';

const REGISTRY = 'https://registry.npmjs.org/';
const registryReachable = await fetch(REGISTRY, { method: 'HEAD', signal: AbortSignal.timeout(10_000) }).then(
  () => true,
  () => false,
);

/** Runs a command without blocking the worker for the minute an install takes (vitest's RPC would time out). */
function runAsync(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (status) => resolve({ status, output }));
  });
}

/**
 * The tarball `npm pack` makes, installed as a user installs it: a fresh project, an empty npm
 * cache, npm's defaults (every dependency's install script runs). It must compile nothing and
 * fetch nothing beyond the npm registry, so it installs on an air-gapped mirror.
 */
describe.skipIf(!registryReachable)('npm pack, installed into a fresh project', () => {
  const project = mkdtempSync(join(tmpdir(), 'serve-fn-install-'));
  const cache = mkdtempSync(join(tmpdir(), 'serve-fn-npm-cache-'));
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_cache: cache };
  // What this machine's npm config adds to npm's defaults would not be on a user's machine.
  delete env.npm_config_nodedir;
  let tarball: string;
  let install: { status: number | null; output: string };

  beforeAll(async () => {
    tarball = await packedServeFn();
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh-project', version: '1.0.0', private: true }));
    // --foreground-scripts: every install script's output lands in the log, so a compiler or a download shows.
    install = await runAsync('npm', ['install', tarball, '--foreground-scripts'], project, env);
  }, 600_000);

  afterAll(async () => {
    await rm(project, { recursive: true, force: true });
    await rm(cache, { recursive: true, force: true });
  }, 300_000);

  it('ships dist/ and the linux-x64 prebuild of the Ascend addon, not a local build', () => {
    const listing = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).stdout.split('\n');
    expect(listing).toContain('package/dist/index.js');
    expect(listing.some((f) => /^package\/native\/prebuilds\/linux-x64\/[^/]+\.node$/.test(f))).toBe(true);
    expect(listing.some((f) => f.startsWith('package/native/build/'))).toBe(false);
  });

  it('installs, compiling nothing and downloading nothing but npm packages', () => {
    expect(install.status, install.output).toBe(0);
    // node-gyp's own lines, and make's for each compiled file.
    expect(install.output).not.toMatch(/gyp info|CXX\(target\)|SOLINK_MODULE/);
    expect(install.output).not.toMatch(/nuget|ENOTFOUND|Downloading/i);
    expect(existsSync(join(project, 'node_modules', 'serve-fn', 'native', 'build'))).toBe(false);
    // ONNX Runtime is an optional peer: its install script would fetch CUDA providers from NuGet.
    expect(existsSync(join(project, 'node_modules', 'onnxruntime-node'))).toBe(false);
  });

  it('answers `npx serve-fn --version` from the project at once', () => {
    const started = performance.now();
    const result = spawnSync('npx', ['serve-fn', '--version'], { cwd: project, env, encoding: 'utf8' });
    const seconds = (performance.now() - started) / 1000;
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(JSON.parse(readFileSync(join(project, 'node_modules', 'serve-fn', 'package.json'), 'utf8')).version);
    // Issue 23 asks for under 2 s; twice that absorbs a loaded machine, and a reinstall takes minutes.
    expect(seconds).toBeLessThan(4);
  });

  it('loads the Ascend addon from the prebuild, and names onnxruntime-node as the step ONNX models need', () => {
    const result = spawnSync('npx', ['serve-fn', 'doctor', '--json'], { cwd: project, env, encoding: 'utf8' });
    const report = JSON.parse(result.stdout) as { npu: { reason?: string }; onnxruntime: { available: boolean; reason?: string } };
    expect(report.npu.reason ?? '').not.toContain('native addon could not be loaded');
    expect(report.onnxruntime.available).toBe(false);
    expect(report.onnxruntime.reason).toContain('npm install onnxruntime-node@');
  });
});
