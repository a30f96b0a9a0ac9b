import { execFile, execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, type RunningCli } from './cli-harness.js';

const TOO_LARGE = { error: 'Request body is larger than the limit of 1048576 bytes.', code: 'SF_ERR_BODY_TOO_LARGE' };

/** Node's http.request writing the whole body, 64 KiB at a time as a file upload would, before it looks at the answer. */
function postWholeBody(url: string, body: Buffer): Promise<{ status: number; body: unknown } | { error: string }> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.byteLength } });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    let sent = 0;
    const write = (): void => {
      while (sent < body.byteLength) {
        const chunk = body.subarray(sent, sent + 64 * 1024);
        sent += chunk.byteLength;
        if (!req.write(chunk)) return void req.once('drain', write);
      }
      req.end();
    };
    write();
  });
}

/**
 * Python's urllib (and requests, where installed): clients that send all of the body before they
 * read, and raise BrokenPipeError when the server closes first. Prints `<client> <status>` lines.
 */
const PYTHON_CLIENTS = `
import json, sys, urllib.error, urllib.request
url, kind = sys.argv[1], sys.argv[2]
body = json.dumps({f"k{i}": i for i in range(100_000)}).encode() if kind == "keys" else b'{"name": "' + b"x" * int(kind) + b'"}'
headers = {"content-type": "application/json"}
try:
    print("urllib", urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers)).status)
except urllib.error.HTTPError as e:
    print("urllib", e.code, e.read().decode())
except Exception as e:
    print("urllib", type(e).__name__)
try:
    import requests
except ImportError:
    sys.exit(0)
try:
    r = requests.post(url, data=body, headers=headers)
    print("requests", r.status_code, r.text)
except Exception as e:
    print("requests", type(e).__name__)
`;

function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'import urllib.request'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function python(url: string, kind: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    execFile('python3', ['-c', PYTHON_CLIENTS, url, kind], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim().split('\n')))),
  );
}

/**
 * A body over a JSON route's 1 MiB limit, written whole by a client that reads only afterwards:
 * the 413 must reach it (the server reads and discards the rest, nginx's lingering close), not a
 * broken pipe.
 */
describe('serve-fn start answers an oversized body with a 413 every client reads', () => {
  let cli: RunningCli;
  beforeAll(async () => {
    cli = await startCli(['start', 'test/fixtures/cli/greeter-model.ts', '--host', '127.0.0.1']);
    await cli.waitForOutput(/serve-fn ready/, 30_000);
  }, 40_000);
  afterAll(async () => {
    expect(await cli.stop()).toBe(0);
  });

  it.each([10, 30])('Node http.request writing %i MB, then reading', async (mb) => {
    const body = Buffer.concat([Buffer.from('{"name": "'), Buffer.alloc(mb * 1000 * 1000, 'x'), Buffer.from('"}')]);
    expect(await postWholeBody(`${cli.base}/greet`, body)).toEqual({ status: 413, body: TOO_LARGE });
  });

  it.skipIf(!hasPython())('Python urllib and requests sending 10 MB, 30 MB, and 100k keys', async () => {
    for (const kind of [String(10_000_000), String(30_000_000), 'keys']) {
      const lines = await python(`${cli.base}/greet`, kind);
      for (const line of lines) expect(line).toMatch(/^(urllib|requests) 413 /);
      for (const line of lines) expect(JSON.parse(line.replace(/^\w+ 413 /, ''))).toEqual(TOO_LARGE);
    }
    // And the server goes on serving.
    const res = await fetch(`${cli.base}/greet`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"ada"}' });
    expect(await res.json()).toEqual({ text: 'hello ada' });
  }, 120_000);
});
