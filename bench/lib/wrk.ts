import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LoadResult } from './load.js';

const run = promisify(execFile);

/**
 * Runs wrk (C, epoll) against a server in another process. On a two-core machine the load
 * generator shares the cores with the server, and wrk takes about a tenth of the CPU autocannon
 * does for the same load (measured: 2.5 % of a core at 730 requests/s), so the server's scaling is
 * not understated by the client's own cost. Debian: `apt-get install -y wrk`.
 */
export async function wrk(url: string, options: { connections: number; durationS: number; threads?: number; body?: string; contentType?: string }): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-wrk-'));
  try {
    const args = ['-t', String(options.threads ?? 2), '-c', String(options.connections), '-d', `${options.durationS}s`, '--latency'];
    if (options.body !== undefined) {
      writeFileSync(join(dir, 'body'), options.body);
      writeFileSync(join(dir, 'post.lua'), postScript(join(dir, 'body'), options.contentType ?? 'application/json'));
      args.push('-s', join(dir, 'post.lua'));
    }
    const { stdout } = await run('wrk', [...args, url], { maxBuffer: 1 << 20 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new Error('wrk is not installed: apt-get install -y wrk');
      throw err;
    });
    return parseWrk(stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function postScript(bodyPath: string, contentType: string): string {
  return [
    'wrk.method = "POST"',
    `wrk.headers["Content-Type"] = ${JSON.stringify(contentType)}`,
    `local file = io.open(${JSON.stringify(bodyPath)}, "rb")`,
    'wrk.body = file:read("*a")',
    'file:close()',
    '',
  ].join('\n');
}

/** Reads wrk's text report: Requests/sec, the --latency percentiles, non-2xx and socket errors. */
export function parseWrk(report: string): LoadResult {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(report)?.[1]);
  if (!Number.isFinite(rps)) throw new Error(`wrk printed no Requests/sec:\n${report}`);
  const percentile = (p: number): number => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(report);
    if (!m) return Number.NaN;
    return Number(m[1]) * { us: 0.001, ms: 1, s: 1000 }[m[2] as 'us' | 'ms' | 's'];
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(report)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(report);
  const errors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  return { rps, p50Ms: percentile(50), p99Ms: percentile(99), non2xx, errors };
}
