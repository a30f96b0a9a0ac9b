import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import { loadAverage } from '../lib/process-stats.js';
import { buildSharedWeightMlp, type SharedWeightMlpOptions } from './shared-weight-mlp.js';

/**
 * How bench/batching chose its model: without any server, one ONNX Runtime session in one worker
 * thread vs two sessions in two worker threads (batch 32, intraOpNumThreads 1), plus the cost of a
 * sample at batch 1. A model fit for the bench scales close to 2× on two cores (compute-bound,
 * weights in cache) while costing ≥ 1 ms a sample (so HTTP is not the limit).
 * `node --import ./loader/register.mjs bench/batching/probe-models.ts` from the repository root.
 */
interface ProbeJob {
  readonly modelPath: string;
  readonly batch: number;
  readonly durationMs: number;
}

if (isMainThread) await probeAll();
else await runJob(workerData as ProbeJob);

async function runJob(job: ProbeJob): Promise<void> {
  const session = await ort.InferenceSession.create(job.modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const x = new ort.Tensor('float32', Float32Array.from({ length: job.batch * 256 }, (_, i) => Math.sin(i)), [job.batch, 256]);
  const warm = await session.run({ INPUT0: x });
  const y = warm.OUTPUT0!.data as Float32Array;
  const meanAbs = y.reduce((s, v) => s + Math.abs(v), 0) / y.length;
  await new Promise((resolve) => parentPort!.once('message', resolve));
  let samples = 0;
  const start = performance.now();
  while (performance.now() - start < job.durationMs) {
    await session.run({ INPUT0: x });
    samples += job.batch;
  }
  parentPort!.postMessage({ rate: samples / ((performance.now() - start) / 1000), meanAbs });
  await session.release();
}

/** Starts `count` workers, lets them all load, then times them running at the same moment. */
async function runTogether(count: number, job: ProbeJob): Promise<{ rate: number; meanAbs: number }[]> {
  const workers = Array.from({ length: count }, () => new Worker(new URL(import.meta.url), { workerData: job }));
  await new Promise((r) => setTimeout(r, 3000));
  const results = workers.map((w) => new Promise<{ rate: number; meanAbs: number }>((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  }));
  workers.forEach((w) => w.postMessage('go'));
  const out = await Promise.all(results);
  await Promise.all(workers.map((w) => w.terminate()));
  return out;
}

async function probeAll(): Promise<void> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  mkdirSync(`${root}.bench-out`, { recursive: true });
  const base = { inputSize: 256, outputSize: 16, seed: 7 };
  const candidates: SharedWeightMlpOptions[] = JSON.parse(process.env.PROBE_CANDIDATES ?? 'null') ?? [
    { ...base, width: 256, depth: 1024, rows: 1 },
    { ...base, width: 512, depth: 768, rows: 1 },
    { ...base, width: 1024, depth: 192, rows: 1 },
    { ...base, width: 256, depth: 64, rows: 16 },
  ];
  const durationMs = Number(process.env.PROBE_MS ?? 3000);
  console.log(`load average before: ${loadAverage()}`);
  console.log('| model | µs/sample batch 32, 1 thread | µs/sample batch 1 | batch 32 ÷ batch 1 speed-up | 2 threads ÷ 1 | GFLOP/s, 1 thread | mean abs(y) |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [i, options] of candidates.entries()) {
    const model = buildSharedWeightMlp({ ...base, ...options });
    const modelPath = `${root}.bench-out/probe-${i}.onnx`;
    writeFileSync(modelPath, model.onnx);
    const [one] = await runTogether(1, { modelPath, batch: 32, durationMs });
    const two = await runTogether(2, { modelPath, batch: 32, durationMs });
    const [single] = await runTogether(1, { modelPath, batch: 1, durationMs });
    const twoRate = two.reduce((s, r) => s + r.rate, 0);
    console.log(
      `| ${model.description} | ${(1e6 / one!.rate).toFixed(0)} | ${(1e6 / single!.rate).toFixed(0)} | ` +
        `${(one!.rate / single!.rate).toFixed(2)}× | ${(twoRate / one!.rate).toFixed(2)}× | ` +
        `${((one!.rate * model.flopsPerSample) / 1e9).toFixed(1)} | ${one!.meanAbs.toExponential(2)} |`,
    );
  }
  console.log(`load average after: ${loadAverage()}`);
}
