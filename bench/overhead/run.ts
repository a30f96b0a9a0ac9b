import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { measureCpuShare } from '../batching/cpu-share.js';
import { median, startServer, stopServer, type LoadResult } from '../lib/load.js';
import { loadAverage } from '../lib/process-stats.js';
import { wrk } from '../lib/wrk.js';

/**
 * Issue 16's per-request cost, all in one run: the validated echo (`{text: @IsString @MaxLength(2000),
 * n: @IsInt @Min(0) @Max(100)}` → `{text: upper, n: n+1}`, bench/overhead/echo-models.ts) served by
 * `serve-fn start`, against plain fastify with the same JSON-Schema validation (bare-echo.ts) and
 * FastAPI + uvicorn (fastapi_echo.py, Debian's python3-fastapi, one process, no access log). Every
 * server runs for the whole bench; within each round the measurements alternate, so other work on
 * this shared machine lands on all of them. The load comes from wrk (-t1 -c32), a second process,
 * whose CPU is in the "others" column with whatever else ran.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const rounds = Number(process.env.ROUNDS ?? 3);
const durationS = Number(process.env.DURATION_S ?? 8);
const connections = 32;
const echoBody = JSON.stringify({ text: 'serve small models from typescript', n: 41 });
const boundary = 'serve-fn-bench-boundary';
const uploadBody = [`--${boundary}`, 'Content-Disposition: form-data; name="image"; filename="a.png"', 'Content-Type: image/png', '', 'x'.repeat(4096), `--${boundary}--`, ''].join('\r\n');

interface Server {
  readonly base: string;
  readonly proc: ChildProcess;
}

async function nodeServer(port: number, args: readonly string[], env: Record<string, string> = {}): Promise<Server> {
  return { base: `http://127.0.0.1:${port}`, proc: await startServer([...args], `http://127.0.0.1:${port}${args.includes('start') ? '/health/ready' : '/ready'}`, env) };
}

async function fastApi(port: number): Promise<Server> {
  // Debian's python3, where apt-get installs python3-fastapi (a pyenv python3 on PATH lacks it); PYTHON overrides.
  const proc = spawn(process.env.PYTHON ?? '/usr/bin/python3', [`${root}bench/overhead/fastapi_echo.py`, String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${base}/ready`).then((r) => r.ok, () => false)) return { base, proc };
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error('FastAPI did not start: apt-get install -y python3-fastapi python3-uvicorn');
}

const serveFn = (port: number): string[] => [`${root}bin/serve-fn.js`, 'start', `${root}bench/overhead/echo-models.ts`, '--host', '127.0.0.1', '--port', String(port), '--no-grpc'];
const servers = {
  // Logs at warn, as the issue measured; `start`'s default (info, one access line a request) beside it.
  quiet: await nodeServer(18321, serveFn(18321), { SERVE_FN_LOG_LEVEL: 'warn' }),
  logged: await nodeServer(18322, serveFn(18322)),
  bare: await nodeServer(18323, ['--import', `${root}loader/register.mjs`, `${root}bench/overhead/bare-echo.ts`, '18323']),
  bareLogged: await nodeServer(18324, ['--import', `${root}loader/register.mjs`, `${root}bench/overhead/bare-echo.ts`, '18324', '--log']),
  fastapi: await fastApi(18325),
};
const pids = Object.values(servers).map((s) => s.proc.pid!);
// A server that dies would leave its port to whatever else listens there, and the figures with it.
let stopping = false;
for (const [name, s] of Object.entries(servers)) {
  s.proc.once('exit', (code, signal) => {
    if (!stopping) throw new Error(`server ${name} exited (${code ?? signal}) during the bench: is its port taken?`);
  });
}

const measurements = {
  'serve-fn /echo (worker instance, logs at warn)': { server: servers.quiet, path: '/echo', body: echoBody },
  'bare fastify /echo (no log)': { server: servers.bare, path: '/echo', body: echoBody },
  'FastAPI + uvicorn /echo (no access log)': { server: servers.fastapi, path: '/echo', body: echoBody },
  'serve-fn /echo_batched (@Batch(16, 1000), warn)': { server: servers.quiet, path: '/echo_batched', body: echoBody },
  'serve-fn /echo_inline (inline instance, warn)': { server: servers.quiet, path: '/echo_inline', body: echoBody },
  'serve-fn /echo (start defaults: info, one line a request)': { server: servers.logged, path: '/echo', body: echoBody },
  'bare fastify /echo (request log at info)': { server: servers.bareLogged, path: '/echo', body: echoBody },
  'serve-fn /upload (multipart, no-op model, warn)': { server: servers.quiet, path: '/upload', body: uploadBody, contentType: `multipart/form-data; boundary=${boundary}` },
  'bare fastify /upload (@fastify/multipart)': { server: servers.bare, path: '/upload', body: uploadBody, contentType: `multipart/form-data; boundary=${boundary}` },
} as const;
type Name = keyof typeof measurements;

const results = Object.fromEntries(Object.keys(measurements).map((k) => [k, [] as (LoadResult & { othersPct: number })[]])) as Record<Name, (LoadResult & { othersPct: number })[]>;
const loadBefore = loadAverage();
try {
  for (const [name, m] of Object.entries(measurements) as [Name, (typeof measurements)[Name]][]) {
    await wrk(`${m.server.base}${m.path}`, { connections, durationS: 2, threads: 1, body: m.body, contentType: 'contentType' in m ? m.contentType : undefined });
  }
  for (let round = 0; round < rounds; round++) {
    for (const [name, m] of Object.entries(measurements) as [Name, (typeof measurements)[Name]][]) {
      const cpu = measureCpuShare(pids);
      const r = await wrk(`${m.server.base}${m.path}`, { connections, durationS, threads: 1, body: m.body, contentType: 'contentType' in m ? m.contentType : undefined });
      results[name].push({ ...r, othersPct: cpu().othersPct });
      process.stderr.write(`round ${round + 1} ${name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99Ms} ms, non-2xx ${r.non2xx}\n`);
    }
  }
} finally {
  stopping = true;
  await Promise.all(Object.values(servers).map((s) => stopServer(s.proc)));
}

const rps = (name: Name): number => median(results[name].map((r) => r.rps));
const x2 = (n: number): string => `${n.toFixed(2)}×`;
console.log(`wrk -t1 -c${connections} -d${durationS}s, ${rounds} rounds alternating; load average ${loadBefore} before, ${loadAverage()} after\n`);
console.log(`| measurement | req/s (median of ${rounds}) | p50 ms | p99 ms | non-2xx + errors | others % of a core (wrk included) |`);
console.log('|---|---|---|---|---|---|');
for (const name of Object.keys(measurements) as Name[]) {
  const rs = results[name];
  console.log(`| ${name} | ${rps(name).toFixed(0)} | ${median(rs.map((r) => r.p50Ms))} | ${median(rs.map((r) => r.p99Ms))} | ${rs.reduce((n, r) => n + r.non2xx + r.errors, 0)} | ${rs.map((r) => r.othersPct.toFixed(0)).join(', ')} |`);
}
const ratio = (a: Name, b: Name, target: string): string => `${x2(rps(a) / rps(b))} (per round ${results[a].map((r, i) => x2(r.rps / results[b][i]!.rps)).join(', ')}; target ${target})`;
console.log('');
console.log(`serve-fn / bare fastify, validated echo, worker instance: ${ratio('serve-fn /echo (worker instance, logs at warn)', 'bare fastify /echo (no log)', '≥ 0.85×')}`);
console.log(`serve-fn / FastAPI + uvicorn, the same: ${ratio('serve-fn /echo (worker instance, logs at warn)', 'FastAPI + uvicorn /echo (no access log)', '≥ 5×')}`);
console.log(`serve-fn @Batch(16, 1000) / bare fastify: ${ratio('serve-fn /echo_batched (@Batch(16, 1000), warn)', 'bare fastify /echo (no log)', '≥ 0.85×')}`);
console.log(`inline / worker instance: ${ratio('serve-fn /echo_inline (inline instance, warn)', 'serve-fn /echo (worker instance, logs at warn)', '≥ 1.2×')}`);
console.log(`request logging at start's default level, logged / quiet: ${ratio('serve-fn /echo (start defaults: info, one line a request)', 'serve-fn /echo (worker instance, logs at warn)', 'cost ≤ 10 %, i.e. ≥ 0.90×')}`);
console.log(`both logging a line a request, serve-fn / bare fastify: ${ratio('serve-fn /echo (start defaults: info, one line a request)', 'bare fastify /echo (request log at info)', '—')}`);
console.log(`multipart upload, serve-fn / bare fastify + @fastify/multipart: ${ratio('serve-fn /upload (multipart, no-op model, warn)', 'bare fastify /upload (@fastify/multipart)', '≥ 0.7×')}`);
