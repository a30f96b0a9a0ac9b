import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectDoctorReport } from '../../src/cli/doctor-command.js';
import { BIN, freePort } from './cli-harness.js';
import { packedServeFn } from './packed-serve-fn.js';

/**
 * `serve-fn new` as a user runs it: generate each template with this checkout's `serve-fn`, install it
 * with the tarball `npm pack` makes of this checkout,
 * run the project's own tests, and serve it with the project's `serve-fn`.
 */

const tmp = mkdtempSync(join(tmpdir(), 'serve-fn-templates-'));
// Five installed projects: removed without blocking the worker, and with time to do it on a loaded machine.
afterAll(() => rm(tmp, { recursive: true, force: true }), 300_000);

const a = Array.from({ length: 16 }, (_, i) => i);
const b = Array.from({ length: 16 }, () => 10);

interface ServeCheck {
  /** What `serve-fn start` is given, relative to the project. */
  readonly entry: string;
  readonly path: (modelName: string) => string;
  readonly body: unknown;
  readonly expected: unknown;
}

const SERVE_CHECKS: Record<string, ServeCheck> = {
  basic: { entry: '.', path: () => '/predict', body: { text: 'serve small models quickly' }, expected: { words: 4, longest: 'quickly', instance: 0 } },
  onnx: { entry: '.', path: () => '/add-sub', body: { a, b }, expected: { sum: a.map((v) => v + 10), difference: a.map((v) => v - 10) } },
  streaming: { entry: '.', path: () => '/generate', body: { prompt: 'hello stream' }, expected: 'data: {"index":0,"token":"hello"}\n\ndata: {"index":1,"token":"stream"}\n\n' },
  'triton-repository': {
    entry: 'models',
    path: (model) => `/v2/models/${model}/infer`,
    body: { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b }] },
    expected: {
      model_name: 'triton_repository_app',
      model_version: '1',
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: a.map((v) => v + 10) },
        { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: a.map((v) => v - 10) },
      ],
    },
  },
};

/**
 * Runs a command to its end without blocking this test process: an `npm install` plus `npm test` can
 * outlast vitest's 60 s worker RPC timeout, which a blocked event loop then trips (`Timeout calling
 * "onTaskUpdate"`) although every test passed.
 */
function run(command: string, args: string[], cwd: string): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, npm_config_update_notifier: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, output }));
  });
}

/** Serves the project with its own `node_modules/.bin/serve-fn`, makes one request, and stops it with SIGTERM. */
async function serveOnce(project: string, check: ServeCheck, modelName: string): Promise<{ status: number; body: unknown; exitCode: number | null }> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['node_modules/.bin/serve-fn', 'start', check.entry, '--host', '127.0.0.1', '--port', String(port), '--grpc-port', '0'], {
    cwd: project,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    // Generous: two worker instances compile the model's TypeScript, which a loaded machine takes its time over.
    const timer = setTimeout(() => reject(new Error(`serve-fn start did not get ready:\n${output}`)), 120_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('serve-fn ready')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`serve-fn start exited:\n${output}`)));
  });
  try {
    const res = await fetch(`http://127.0.0.1:${port}${check.path(modelName)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(check.body),
    });
    const body: unknown = res.headers.get('content-type')?.startsWith('application/json') ? await res.json() : await res.text();
    proc.kill('SIGTERM');
    return { status: res.status, body, exitCode: await exited };
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  }
}

const npuAvailable = (await collectDoctorReport()).npu.available;

describe.sequential('serve-fn new', () => {
  let tarball: string;
  beforeAll(async () => {
    tarball = await packedServeFn();
  }, 600_000);

  async function generateAndTest(template: string): Promise<{ project: string; output: string }> {
    const project = join(tmp, `${template}-app`);
    // Until serve-fn is on npm, a project names the tarball `npm pack` makes (docs/install.md).
    const created = await run(process.execPath, [BIN, 'new', project, '--template', template, '--serve-fn', tarball], tmp);
    expect(created.status, created.output).toBe(0);
    expect(created.output).toContain('Next steps:');
    expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).dependencies['serve-fn']).toBe(`file:${relative(project, tarball)}`);

    // --prefer-offline: what `npm ci` cached is taken from the cache, and what it did not (the
    // registry metadata of the projects' own dependencies) from the registry, as a user's install does.
    // Install scripts run, as a user's do: serve-fn's finds its prebuild and compiles nothing.
    const install = await run('npm', ['install', '--prefer-offline', '--foreground-scripts', '--no-audit', '--no-fund'], project);
    expect(install.status, install.output).toBe(0);
    expect(install.output).not.toMatch(/gyp info/);

    const tested = await run('npm', ['test'], project);
    expect(tested.status, tested.output).toBe(0);
    expect(tested.output).toMatch(/# fail 0/);
    return { project, output: tested.output };
  }

  it.each(['basic', 'onnx', 'streaming', 'triton-repository'])('the %s template installs, passes its tests and serves', async (template) => {
    const { project } = await generateAndTest(template);
    const modelName = `${template}_app`.replaceAll('-', '_');
    const served = await serveOnce(project, SERVE_CHECKS[template]!, modelName);
    expect(served).toEqual({ status: 200, body: SERVE_CHECKS[template]!.expected, exitCode: 0 });
  }, 300_000);

  // Serving it needs an Ascend NPU and a compiled models/model.om, which no test machine has.
  it('the npu template installs and passes its tests, skipping only the device run without an NPU', async () => {
    const { output } = await generateAndTest('npu');
    if (!npuAvailable) expect(output).toContain('# SKIP serve-fn doctor reports no Ascend NPU');
    else expect(output).toContain('# SKIP models/model.om is missing');
  }, 300_000);
});
