import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BIN, freePort, REPO_ROOT, startCli, type RunningCli } from './cli-harness.js';

const tmp = join(REPO_ROOT, 'test', '.tmp', `cli-${process.pid}`);
mkdirSync(tmp, { recursive: true });
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const post = (cli: RunningCli, path: string, body: unknown): Promise<Response> =>
  fetch(cli.base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** The access-log lines printed so far (request-log.ts), without their durations. */
const accessLines = (cli: RunningCli): string[] =>
  [...cli.output().matchAll(/\b((?:GET|POST) \S+ \d{3}) \d+\.\d ms\b/g)].map((m) => m[1]!);

/** Resolves once `check` holds, polling; the test's own timeout bounds the wait. */
async function waitFor(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20));
}

/** Another server holding a port on 127.0.0.1. */
function occupyPort(): Promise<{ port: number; server: Server }> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => resolve({ port: (server.address() as { port: number }).port, server }));
  });
}

describe('serve-fn --version', () => {
  it('loads neither the TypeScript loader nor the server to answer', () => {
    const record = join(tmp, 'version-imports.txt');
    const result = spawnSync(process.execPath, ['--import', './test/fixtures/cli/record-imports.mjs', BIN, '--version'], { cwd: REPO_ROOT, env: { ...process.env, RECORD_IMPORTS: record }, encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    const loaded = readFileSync(record, 'utf8').trim().split('\n');
    expect(loaded).toContainEqual(expect.stringMatching(/\/cli\/main\.js$/));
    // The loader starts a hooks thread with @swc/core in it; the server brings fastify, gRPC and more.
    expect(loaded.filter((url) => /loader\/register\.mjs|@swc|fastify|grpc|onnxruntime|chokidar|class-validator|serve-fn-server|start-command/.test(url))).toEqual([]);
  });

  it('prints the version of package.json', async () => {
    const cli = await startCli(['--version']);
    expect(await cli.waitForExit()).toBe(0);
    expect(cli.output().trim()).toBe((JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});

describe('serve-fn start', () => {
  it('serves the quickstart with JSON logs', async () => {
    const cli = await startCli(['start', 'examples/quickstart', '--host', '127.0.0.1']);
    try {
      await cli.waitForOutput(/"msg":"serve-fn ready"/);
      const res = await post(cli, '/prosody', { text: 'hello there' });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ words: 2, syllables: 4, duration_ms: 800, batch_size: 1 });
      const form = new FormData();
      form.set('tts_text', 'hi you');
      form.set('spk_id', 'tenor');
      const wav = await fetch(`${cli.base}/inference_sft`, { method: 'POST', body: form });
      expect(wav.status).toBe(200);
      expect(wav.headers.get('content-type')).toBe('audio/wav');
      const bytes = Buffer.from(await wav.arrayBuffer());
      expect(bytes.subarray(0, 4).toString()).toBe('RIFF');
      expect(bytes.length).toBe(44 + 6 * 960 * 2);
      for (const line of cli.output().trim().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
      // One entry per request, not fastify's 'incoming request' and 'request completed' pair.
      await cli.waitForOutput(/POST \/inference_sft 200/);
      expect(accessLines(cli)).toEqual(['POST /prosody 200', 'POST /inference_sft 200']);
      expect(cli.output()).not.toContain('incoming request');
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });

  it('on SIGTERM finishes in-flight requests, refuses new ones, finalizes every instance and exits 0', async () => {
    const marker = join(tmp, 'marker.txt');
    writeFileSync(marker, '');
    const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1'], { SERVE_FN_TEST_MARKER: marker });
    await cli.waitForOutput(/serve-fn ready/);
    const inflight = post(cli, '/sleep', { ms: 1500 });
    await new Promise((r) => setTimeout(r, 300));
    cli.proc.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    const late = await post(cli, '/sleep', { ms: 1 }).then((r) => r.status, () => 'refused');
    expect([503, 'refused']).toContain(late);
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ slept: 1500 });
    expect(await cli.waitForExit()).toBe(0);
    const events = readFileSync(marker, 'utf8').trim().split('\n');
    expect(events.filter((e) => e.startsWith('initialize')).sort()).toEqual(['initialize 0', 'initialize 1']);
    expect(events.filter((e) => e.startsWith('finalize')).sort()).toEqual(['finalize 0', 'finalize 1']);
    expect(events.indexOf('finalize 0')).toBeGreaterThan(events.findIndex((e) => e.startsWith('done')));
  });

  // As `serve-fn dev` stops a server during a reload (no shutdown delay), and as Kubernetes stops a pod still loading its models.
  it.each([
    ['no shutdown delay', { SERVE_FN_SHUTDOWN_DELAY_MS: '0' }],
    ['a shutdown delay', { SERVE_FN_SHUTDOWN_DELAY_MS: '5000' }],
  ])('on SIGTERM while models initialise (%s) finishes the start, never listens, finalizes every instance and exits 0', async (_name, env) => {
    const marker = join(tmp, `init-sigterm-${Object.keys(env).length}.txt`);
    writeFileSync(marker, '');
    const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1'], { ...env, SERVE_FN_TEST_MARKER: marker, SLOW_INIT_MS: '1500' });
    await waitFor(() => readFileSync(marker, 'utf8').includes('initializing'));
    cli.proc.kill('SIGTERM');
    expect(await cli.waitForExit()).toBe(0);
    const events = readFileSync(marker, 'utf8').trim().split('\n');
    expect(events.filter((e) => e.startsWith('initialize ')).sort()).toEqual(['initialize 0', 'initialize 1']);
    expect(events.filter((e) => e.startsWith('finalize')).sort()).toEqual(['finalize 0', 'finalize 1']);
    expect(cli.output()).not.toContain('serve-fn ready');
    expect(cli.output()).not.toMatch(/serve-fn: |shutdown failed|already booted/);
  });

  it('takes --json-body-limit, and --shutdown-delay over SERVE_FN_SHUTDOWN_DELAY_MS', async () => {
    const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1', '--json-body-limit', '100', '--shutdown-delay', '500'], { SERVE_FN_SHUTDOWN_DELAY_MS: '600000' });
    await cli.waitForOutput(/serve-fn ready/);
    const res = await fetch(`${cli.base}/sleep`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ms: 1, pad: ' '.repeat(200) }) });
    expect([res.status, await res.json()]).toEqual([413, { error: 'Request body is larger than the limit of 100 bytes.', code: 'SF_ERR_BODY_TOO_LARGE' }]);
    cli.proc.kill('SIGTERM');
    await cli.waitForOutput(/SIGTERM: readiness off, draining in 500 ms/);
    expect(await cli.waitForExit()).toBe(0);
  });

  it('runs model instances at niceness 10 unless SERVE_FN_INSTANCE_NICENESS says otherwise', async () => {
    const cli = await startCli(['start', 'test/fixtures/models/busy-model.ts', '--host', '127.0.0.1'], { SERVE_FN_INSTANCE_NICENESS: '', SERVE_FN_TEST_JOURNAL: join(tmp, 'journal.log') });
    try {
      await cli.waitForOutput(/"msg":"serve-fn ready"/);
      const answers = await Promise.all([1, 2, 3, 4].map(() => fetch(`${cli.base}/niceness`).then((r) => r.json())));
      expect(answers).toEqual([1, 2, 3, 4].map(() => ({ niceness: 10 })));
    } finally {
      await cli.stop();
    }
  });

  it('fails start-up with the model name and the cause when initialize throws', async () => {
    const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1'], { SLOW_FAIL_INIT: '1' });
    expect(await cli.waitForExit()).toBe(1);
    expect(cli.output()).toMatch(/Model 'slow' instance \d failed in initialize\(\): weights file is corrupt/);
  });

  it('exits 1 before initialising any model, naming --port, when the port is in use', async () => {
    const marker = join(tmp, 'port-in-use.txt');
    writeFileSync(marker, '');
    const { port, server } = await occupyPort();
    try {
      const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1'], { SERVE_FN_TEST_MARKER: marker }, port);
      expect(await cli.waitForExit()).toBe(1);
      expect(cli.output()).toContain(`serve-fn: 127.0.0.1:${port} is in use by another server: stop it, or choose another port with --port.`);
      expect(readFileSync(marker, 'utf8')).toBe('');
    } finally {
      server.close();
    }
  });

  it('explains a missing entry', async () => {
    const cli = await startCli(['start', 'no/such/place']);
    expect(await cli.waitForExit()).toBe(1);
    expect(cli.output()).toContain("No entry found at 'no/such/place'");
  });
});

describe('serve-fn openapi', () => {
  it('prints the OpenAPI document without serving', async () => {
    const cli = await startCli(['openapi', 'examples/quickstart']);
    expect(await cli.waitForExit()).toBe(0);
    const doc = JSON.parse(cli.output()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/inference_sft', '/prosody', '/health/ready']));
  });

  it('prints the document of a Triton model repository, as start and dev serve it', async () => {
    const cli = await startCli(['openapi', 'examples/triton-repository/models']);
    expect(await cli.waitForExit()).toBe(0);
    const doc = JSON.parse(cli.output()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v2/models/{model}/infer', '/v2/repository/index']));
  });
});

describe('serve-fn dev', () => {
  it('binds 127.0.0.1, prints the URLs, and reloads the model on each save, by rename (sed -i) or in place', async () => {
    const dir = join(tmp, 'dev');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'greeter.ts');
    const source = readFileSync(join(REPO_ROOT, 'test/fixtures/cli/greeter-model.ts'), 'utf8');
    writeFileSync(file, source);
    const cli = await startCli(['dev', file], {}, await freePort());
    const answerAfter = async (save: () => void, greeting: string): Promise<number> => {
      const saved = Date.now();
      save();
      let text = '';
      // A reload starts a fresh Node process (dev keeps no loaded spare): seconds when idle, far more on a loaded machine.
      while (Date.now() - saved < 60_000) {
        const res = await post(cli, '/greet', { name: 'ada' }).catch(() => undefined);
        if (res?.status === 200) text = ((await res.json()) as { text: string }).text;
        if (text === `${greeting} ada`) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(text).toBe(`${greeting} ada`);
      return Date.now() - saved;
    };
    try {
      await cli.waitForOutput(/serve-fn ready at http:\/\/127\.0\.0\.1/, 30_000);
      expect(cli.output()).toContain(`${cli.base}/docs`);
      expect(await (await post(cli, '/greet', { name: 'ada' })).json()).toEqual({ text: 'hello ada' });

      // sed -i, like vim and JetBrains' safe write, replaces the file by a rename: three in a row, then
      // a save in place, which Node's recursive fs.watch missed (it kept watching the replaced inode).
      const renamed: number[] = [];
      for (const [from, to] of [['hello', 'hola'], ['hola', 'ciao'], ['ciao', 'hallo']]) {
        renamed.push(await answerAfter(() => expect(spawnSync('sed', ['-i', `s/'${from}'/'${to}'/`, file]).status).toBe(0), to!));
      }
      const inPlace = await answerAfter(() => writeFileSync(file, source.replace("'hello'", "'bonjour'")), 'bonjour');
      expect(cli.output()).toMatch(/greeter\.ts changed, reloading/);
      // Each save is named once, by the saved file: not by sed's temporary file, not twice.
      const reloads = cli.output().split('\n').filter((line) => line.includes('changed, reloading'));
      expect(reloads.every((line) => line.endsWith('serve-fn dev: greeter.ts changed, reloading'))).toBe(true);
      expect(reloads).toHaveLength(4);
      expect(cli.output()).toMatch(/serve-fn dev: reloaded in \d+ ms/);
      console.info(`serve-fn dev reload, save to new answer: sed -i ${renamed.join(', ')} ms; in place ${inPlace} ms`);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 300_000);

  it('keeps answering across a reload, and keeps the previous version when the saved one fails to load', async () => {
    const dir = join(tmp, 'dev-no-downtime');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'greeter.ts');
    const source = readFileSync(join(REPO_ROOT, 'test/fixtures/cli/greeter-model.ts'), 'utf8');
    writeFileSync(file, source);
    const cli = await startCli(['dev', file], {}, await freePort());
    /** What a client polling /greet on keep-alive connections got, in order: a greeting, a status, or the error fetch threw. */
    const seen: string[] = [];
    let polling = true;
    const poll = (async () => {
      while (polling) {
        try {
          const res = await post(cli, '/greet', { name: 'ada' });
          seen.push(res.status === 200 ? ((await res.json()) as { text: string }).text : `status ${res.status}`);
        } catch (err) {
          seen.push(`error ${String((err as Error).cause ?? err)}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const until = async (check: () => boolean): Promise<void> => {
      while (!check()) await new Promise((r) => setTimeout(r, 50));
    };
    try {
      await cli.waitForOutput(/serve-fn ready at/, 60_000);
      await until(() => seen.includes('hello ada'));
      writeFileSync(file, source.replace("'hello'", "'hola'"));
      await cli.waitForOutput(/serve-fn dev: reloaded in \d+ ms/, 60_000);
      await until(() => seen.includes('hola ada'));
      // No refused connection, no 5xx: the old version answered until the new one was ready.
      expect(seen.slice(seen.indexOf('hello ada')).filter((a) => a !== 'hello ada' && a !== 'hola ada')).toEqual([]);

      // A save that does not load: the previous version keeps answering, and the log says why.
      writeFileSync(file, `${source.replace("'hello'", "'hola'")}\nthis is not TypeScript(\n`);
      await cli.waitForOutput(/the new version failed to load/, 60_000);
      const before = seen.length;
      await until(() => seen.length > before + 5);
      expect(seen.slice(before)).toEqual(Array(seen.length - before).fill('hola ada'));
    } finally {
      polling = false;
      await poll;
      expect(await cli.stop()).toBe(0);
    }
    const answers = seen.slice(seen.indexOf('hello ada'));
    // Nor across the failed load; and once the new version answered, only it did.
    expect(answers.filter((a) => a !== 'hello ada' && a !== 'hola ada')).toEqual([]);
    expect(answers.slice(answers.indexOf('hola ada'))).not.toContain('hello ada');
  }, 180_000);

  it('passes --json-body-limit to the server it runs', async () => {
    const cli = await startCli(['dev', 'test/fixtures/cli/greeter-model.ts', '--json-body-limit', '100'], {}, await freePort());
    try {
      await cli.waitForOutput(/serve-fn ready at/, 30_000);
      const res = await post(cli, '/greet', { name: 'x'.repeat(200) });
      expect([res.status, await res.json()]).toEqual([413, { error: 'Request body is larger than the limit of 100 bytes.', code: 'SF_ERR_BODY_TOO_LARGE' }]);
      expect((await post(cli, '/greet', { name: 'ada' })).status).toBe(200);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });

  it('lists WebSocket routes and logs one line per request', async () => {
    const cli = await startCli(['dev', 'test/fixtures/models/socket-model.ts'], {}, await freePort());
    try {
      await cli.waitForOutput(/serve-fn ready at/, 30_000);
      const ws = cli.base.replace('http', 'ws');
      expect(cli.output()).toContain(`  WebSocket   ${ws}/ws/echo  (sockets.echo)`);
      expect(cli.output()).toContain(`  WebSocket   ${ws}/ws/ticks  (sockets.ticks)`);
      expect((await fetch(`${cli.base}/health/ready`)).status).toBe(200);
      expect((await fetch(`${cli.base}/nowhere`)).status).toBe(404);
      await cli.waitForOutput(/GET \/nowhere 404/);
      expect(accessLines(cli)).toEqual(['GET /health/ready 200', 'GET /nowhere 404']);
      expect(cli.output()).not.toMatch(/incoming request|request completed|reqId|not found/);
      // dev forwards the upgrade to the server it runs, and the messages both ways.
      const socket = new WebSocket(`${ws}/ws/echo`);
      const replies: string[] = [];
      await new Promise<void>((resolve, reject) => {
        socket.on('error', reject);
        socket.on('message', (data) => {
          replies.push(String(data));
          if (replies.length === 1) socket.send(JSON.stringify({ op: 'echo', text: 'hi' }));
          else socket.close();
        });
        socket.on('close', () => resolve());
      });
      expect(JSON.parse(replies[1]!)).toEqual({ text: 'hi', count: 1, instance: expect.any(Number) });
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });

  it('exits 1 with a --port hint when the port is in use, instead of waiting for a file change', async () => {
    const { port, server } = await occupyPort();
    try {
      const cli = await startCli(['dev', 'test/fixtures/cli/slow-model.ts'], {}, port);
      expect(await cli.waitForExit()).toBe(1);
      expect(cli.output()).toContain(`serve-fn: 127.0.0.1:${port} is in use by another server: stop it, or choose another port with --port.`);
    } finally {
      server.close();
    }
  });
});
