import { fileURLToPath } from 'node:url';
import { load, median, startServer, stopServer, type LoadResult } from '../lib/load.js';

/**
 * serve-fn's quickstart /prosody (class-validator on, worker-thread instance, dynamic batching) vs
 * a bare fastify route doing the same work, alternated in one run so both see the same machine.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const rounds = Number(process.env.ROUNDS ?? 3);
const durationS = Number(process.env.DURATION_S ?? 10);
const connections = Number(process.env.CONNECTIONS ?? 64);
const body = JSON.stringify({ text: 'serve small models from typescript', speed: 1.5 });

const targets = {
  'serve-fn': {
    args: [`${root}bin/serve-fn.js`, 'start', `${root}examples/quickstart`, '--host', '127.0.0.1', '--port', '8301'],
    ready: 'http://127.0.0.1:8301/health/ready',
    url: 'http://127.0.0.1:8301/prosody',
    env: { SERVE_FN_LOG_LEVEL: 'warn' },
  },
  'bare fastify': {
    args: ['--import', `${root}loader/register.mjs`, `${root}bench/overhead/bare-fastify.ts`, '8302'],
    ready: 'http://127.0.0.1:8302/ready',
    url: 'http://127.0.0.1:8302/prosody',
    env: {},
  },
};

const results: Record<string, LoadResult[]> = { 'serve-fn': [], 'bare fastify': [] };
for (let round = 0; round < rounds; round++) {
  for (const [name, t] of Object.entries(targets)) {
    const proc = await startServer(t.args, t.ready, t.env);
    await load(t.url, { connections, durationS: 2, body });
    const r = await load(t.url, { connections, durationS, body });
    results[name].push(r);
    process.stderr.write(`round ${round + 1} ${name}: ${r.rps.toFixed(0)} req/s p99 ${r.p99Ms} ms non2xx ${r.non2xx}\n`);
    await stopServer(proc);
  }
}

const row = (name: string): string => {
  const rs = results[name];
  return `| ${name} | ${median(rs.map((r) => r.rps)).toFixed(0)} | ${median(rs.map((r) => r.p50Ms))} | ${median(rs.map((r) => r.p99Ms))} | ${rs.reduce((n, r) => n + r.non2xx + r.errors, 0)} |`;
};
const ratio = median(results['serve-fn'].map((r) => r.rps)) / median(results['bare fastify'].map((r) => r.rps));
console.log(`| server | req/s (median of ${rounds}) | p50 ms | p99 ms | non-2xx + errors |`);
console.log('|---|---|---|---|---|');
console.log(row('serve-fn'));
console.log(row('bare fastify'));
console.log(`\nratio serve-fn / bare fastify: ${ratio.toFixed(2)}× (target ≥ 0.85×)`);
