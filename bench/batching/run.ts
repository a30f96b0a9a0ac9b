import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import * as ort from 'onnxruntime-node';
import { buildMlpModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { load, startServer, stopServer } from '../lib/load.js';
import { INPUT_SIZE, MAX_BATCH } from './mlp-model.js';

/**
 * Issue 3's batching benchmark, all in one run on one machine:
 * (a) served, batched, 1 instance vs the same model run back-to-back in-process at batch MAX_BATCH;
 * (b) batching on vs off; (c) 2 instances vs 1; (d) /health/live p99 while the model is saturated.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const out = `${root}.bench-out`;
const durationS = Number(process.env.DURATION_S ?? 15);
const connections = 64;
const hidden = (process.env.BENCH_HIDDEN ?? '4096,4096,4096,4096').split(',').map(Number);

mkdirSync(out, { recursive: true });
const modelPath = `${out}/mlp.onnx`;
writeFileSync(modelPath, buildMlpModel({ inputSize: INPUT_SIZE, hiddenSizes: hidden, outputSize: 16, seed: 7 }));
const body = JSON.stringify({ x: Array.from({ length: INPUT_SIZE }, (_, i) => Math.sin(i)) });

async function inProcessLimit(batch: number): Promise<number> {
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const x = new ort.Tensor('float32', new Float32Array(batch * INPUT_SIZE).fill(0.5), [batch, INPUT_SIZE]);
  await session.run({ INPUT0: x });
  let samples = 0;
  const start = performance.now();
  while (performance.now() - start < 5000) {
    await session.run({ INPUT0: x });
    samples += batch;
  }
  const rate = samples / ((performance.now() - start) / 1000);
  await session.release();
  return rate;
}

async function served(instances: number, path: string, probeHealth: boolean): Promise<{ rps: number; p99: number; healthP99?: number; healthP50?: number; bad: number }> {
  const port = 8400 + instances;
  const proc = await startServer(
    [`${root}bin/serve-fn.js`, 'start', `${root}bench/batching/mlp-model.ts`, '--host', '127.0.0.1', '--port', String(port)],
    `http://127.0.0.1:${port}/health/ready`,
    { BENCH_INSTANCES: String(instances), BENCH_MLP_ONNX: modelPath, SERVE_FN_LOG_LEVEL: 'warn' },
  );
  try {
    const url = `http://127.0.0.1:${port}${path}`;
    await load(url, { connections, durationS: 3, body });
    const health = probeHealth
      ? autocannon({ url: `http://127.0.0.1:${port}/health/live`, connections: 1, duration: durationS - 2, overallRate: 50 })
      : undefined;
    const r = await load(url, { connections, durationS, body });
    const h = await health;
    return { rps: r.rps, p99: r.p99Ms, healthP99: h?.latency.p99, healthP50: h?.latency.p50, bad: r.non2xx + r.errors };
  } finally {
    await stopServer(proc);
  }
}

const limit = await inProcessLimit(MAX_BATCH);
const single = await inProcessLimit(1);
const batched1 = await served(1, '/infer', true);
const unbatched1 = await served(1, '/infer-single', false);
const batched2 = await served(2, '/infer', false);

const f = (n: number): string => n.toFixed(0);
console.log(`MLP 256→${hidden.join('→')}→16 FP32, ONNX Runtime CPU, intraOpNumThreads 1; ${connections} clients, ${durationS} s per run\n`);
console.log('| what | samples/s | p99 ms | failed |');
console.log('|---|---|---|---|');
console.log(`| in-process, no server, batch ${MAX_BATCH} (the limit) | ${f(limit)} | | |`);
console.log(`| in-process, no server, batch 1 | ${f(single)} | | |`);
console.log(`| served, @Batch(${MAX_BATCH}), 1 instance | ${f(batched1.rps)} | ${batched1.p99} | ${batched1.bad} |`);
console.log(`| served, no batching, 1 instance | ${f(unbatched1.rps)} | ${unbatched1.p99} | ${unbatched1.bad} |`);
console.log(`| served, @Batch(${MAX_BATCH}), 2 instances | ${f(batched2.rps)} | ${batched2.p99} | ${batched2.bad} |`);
console.log('');
console.log(`(a) served batched / in-process limit: ${(batched1.rps / limit).toFixed(2)}× (target ≥ 0.9×)`);
console.log(`(b) batching on / off: ${(batched1.rps / unbatched1.rps).toFixed(2)}× (target ≥ 3×)`);
console.log(`(c) 2 instances / 1: ${(batched2.rps / batched1.rps).toFixed(2)}× (target ≥ 1.7×)`);
console.log(`(d) /health/live while saturated: p50 ${batched1.healthP50} ms, p99 ${batched1.healthP99} ms (target p99 ≤ 5 ms)`);
