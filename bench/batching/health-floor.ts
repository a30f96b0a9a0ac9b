import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { load, startServer, stopServer } from '../lib/load.js';
import { INPUT_SIZE, MAX_BATCH, OUTPUT_SIZE } from './mlp-model.js';
import { buildSharedWeightMlp } from './shared-weight-mlp.js';

/**
 * Target (d) of issue 3 read against a floor: /health/live latency, probed from its own process,
 * on the idle and the saturated served MLP (1 instance, @Batch(32)), and on bare fastify fed the
 * same traffic shape (burst-server.ts). The bare server shows what any single Node HTTP thread
 * handling these bursts costs a probe on this machine.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const out = `${root}.bench-out`;
const seconds = Number(process.env.DURATION_S ?? 10);
const run = promisify(execFile);
mkdirSync(out, { recursive: true });
const modelPath = `${out}/mlp-health.onnx`;
writeFileSync(modelPath, buildSharedWeightMlp({ inputSize: INPUT_SIZE, width: 512, depth: Number(process.env.BENCH_DEPTH ?? 768), rows: 1, outputSize: OUTPUT_SIZE, seed: 7 }).onnx);
const body = JSON.stringify({ x: Array.from({ length: INPUT_SIZE }, (_, i) => Math.sin(i)) });
const register = `${root}loader/register.mjs`;

async function probe(base: string): Promise<{ p50: number; p99: number; max: number }> {
  const { stdout } = await run(process.execPath, ['--import', register, `${root}bench/batching/health-probe.ts`, `${base}/health/live`, String(seconds - 2)]);
  return JSON.parse(stdout) as { p50: number; p99: number; max: number };
}

async function measure(name: string, args: string[], env: Record<string, string>, port: number): Promise<string> {
  const base = `http://127.0.0.1:${port}`;
  const proc = await startServer(args, `${base}/health/live`, env);
  try {
    await load(`${base}/infer`, { connections: 64, durationS: 3, body });
    const idle = await probe(base);
    const [loaded, saturated] = await Promise.all([load(`${base}/infer`, { connections: 64, durationS: seconds, body }), probe(base)]);
    return `| ${name} | ${idle.p50} / ${idle.p99} | ${saturated.p50} / ${saturated.p99} / ${saturated.max} | ${loaded.rps.toFixed(0)} |`;
  } finally {
    await stopServer(proc);
  }
}

const served = await measure(
  `serve-fn start, @Batch(${MAX_BATCH}), 1 instance`,
  [`${root}bin/serve-fn.js`, 'start', `${root}bench/batching/mlp-model.ts`, '--host', '127.0.0.1', '--port', '8481', '--no-grpc'],
  { BENCH_INSTANCES: '1', BENCH_MLP_ONNX: modelPath, SERVE_FN_LOG_LEVEL: 'warn' },
  8481,
);
const bare = await measure('bare fastify, same bursts (burst-server.ts)', ['--import', register, `${root}bench/batching/burst-server.ts`, '8482'], {}, 8482);
console.log(`/health/live probed 50 times a second from its own process, ${seconds - 2} s; 64 clients load /infer from this process\n`);
console.log('| server | idle p50 / p99 ms | saturated p50 / p99 / max ms | /infer req/s |');
console.log('|---|---|---|---|');
console.log(served);
console.log(bare);
