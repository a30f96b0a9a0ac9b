import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeBertEncoder } from '../fixtures/text/text-model-folders.js';
import { REPO_ROOT, startCli, startCommandLine, type RunningCli } from './cli-harness.js';
import { packedServeFn } from './packed-serve-fn.js';

const run = promisify(execFile);

/** Runs the README's tutorial as written: its file, its `serve-fn dev` command, its requests and answers. */
const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const blockAfter = (marker: string): string[] =>
  [...readme.matchAll(new RegExp(`<!-- ${marker}: ([^>]*?) -->\\s*\`\`\`\\w*\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => `${m[1]}\n${m[2]}`);

const files = blockAfter('tutorial-file').map((b) => {
  const [name, ...code] = b.split('\n');
  return { name, code: code.join('\n') };
});
const requests = blockAfter('tutorial-request').map((b) => b.split('\n').slice(1).join(' ').trim());
const responses = blockAfter('tutorial-response').map((b) => {
  const [status, ...body] = b.split('\n');
  return { status: Number(status), body: JSON.parse(body.join('\n')) as unknown };
});

/** Reads the parts of a README curl line a test needs: method, URL path, headers, body. */
function parseCurl(line: string): { method: string; path: string; headers: Record<string, string>; body?: string } {
  const tokens = [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]);
  const headers: Record<string, string> = {};
  let method = 'GET';
  let path = '';
  let body: string | undefined;
  for (let i = 1; i < tokens.length; i++) {
    const t = tokens[i];
    if (t === '-X') method = tokens[++i];
    else if (t === '-H') {
      const [k, ...v] = tokens[++i].split(':');
      headers[k.trim()] = v.join(':').trim();
    } else if (t === '-d') body = tokens[++i];
    else if (t.startsWith('http')) path = new URL(t).pathname;
  }
  return { method, path, headers, body };
}

/**
 * In a project that installed the packed tarball, as the README's install section says, its
 * `npx serve-fn dev` line runs exactly as written (on a free port through SERVE_FN_PORT).
 */
describe('README tutorial', () => {
  const workDir = mkdtempSync(join(tmpdir(), 'serve-fn-readme-'));
  let cli: RunningCli;

  beforeAll(async () => {
    const tarball = await packedServeFn();
    writeFileSync(join(workDir, 'package.json'), JSON.stringify({ name: 'readme-tutorial', private: true, type: 'module' }));
    // The tutorial's own import besides serve-fn; --prefer-offline takes what `npm ci` cached.
    // Asynchronous: a worker blocked for the install misses vitest's RPC deadlines.
    await run('npm', ['install', tarball, 'class-validator@0.15.1', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: workDir });
    for (const f of files) {
      mkdirSync(dirname(join(workDir, f.name)), { recursive: true });
      writeFileSync(join(workDir, f.name), f.code);
    }
    const [command] = readme.match(/npx serve-fn dev \S+/)!;
    cli = await startCommandLine(command, workDir);
    // npx must find the installed serve-fn, not install anything: a ready server within a minute.
    await cli.waitForOutput(/serve-fn ready at/, 60_000);
  }, 600_000);

  it('has a file, requests and matching responses', () => {
    expect(files).toHaveLength(1);
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(responses).toHaveLength(requests.length);
  });

  it('answers every request exactly as the README shows', async () => {
    for (const [i, line] of requests.entries()) {
      const req = parseCurl(line);
      const res = await fetch(cli.base + req.path, { method: req.method, headers: req.headers, body: req.body });
      expect(res.status, line).toBe(responses[i].status);
      expect(await res.json(), line).toEqual(responses[i].body);
    }
  });

  it('prints the Swagger UI and endpoint URLs in dev mode', () => {
    expect(cli.output()).toContain(`${cli.base}/docs`);
    expect(cli.output()).toMatch(new RegExp(`POST\\s+${cli.base}/score`));
  });
});

/**
 * The README's text model quick start as written: its command on a folder of that name (seeded
 * weights in the sentence-transformers layout, since no real weights can be downloaded here), its
 * curl request, and its openai SDK snippet, run unchanged but for the port.
 */
describe('README text model quick start', () => {
  const workDir = join(REPO_ROOT, 'test', '.tmp', `readme-text-${process.pid}`);
  const [command] = blockAfter('text-command').map((b) => b.split('\n')[1]);
  const [curl] = blockAfter('text-request').map((b) => b.split('\n').slice(1).join(' ').trim());
  const [client] = blockAfter('text-client').map((b) => {
    const [name, ...code] = b.split('\n');
    return { name, code: code.join('\n') };
  });
  let cli: RunningCli;

  beforeAll(async () => {
    const folder = command.match(/npx serve-fn start (\S+)/)![1];
    writeBertEncoder(join(workDir, folder), { pooling: 'cls', normalize: true });
    cli = await startCli(['start', join(workDir, folder), '--host', '127.0.0.1']);
    await cli.waitForOutput(/serve-fn ready/, 60_000);
  }, 90_000);

  afterAll(async () => {
    await cli?.stop();
    await rm(workDir, { recursive: true, force: true });
  }, 300_000);

  it('embeds with the curl request: one normalised vector per input', async () => {
    const req = parseCurl(curl);
    const res = await fetch(cli.base + req.path, { method: 'POST', headers: req.headers, body: req.body });
    expect(res.status).toBe(200);
    const vectors = (await res.json()) as number[][];
    expect(vectors).toHaveLength((JSON.parse(req.body!) as { inputs: string[] }).inputs.length);
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
  });

  it('runs the openai SDK snippet unchanged', async () => {
    const file = join(workDir, client.name);
    writeFileSync(file, client.code.replace('http://127.0.0.1:8000', cli.base));
    const { stdout } = await run(process.execPath, ['--import', join(REPO_ROOT, 'loader/register.mjs'), file]);
    const [width, tokens] = stdout.trim().split(' ').map(Number);
    expect(width).toBe(16);
    expect(tokens).toBeGreaterThan(2);
  }, 60_000);
});
