import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadAverage } from '../lib/process-stats.js';
import { runPlainOrt } from './plain-ort.js';
import { buildSharedWeightMlp, type SharedWeightMlpOptions } from './shared-weight-mlp.js';

/**
 * How bench/batching chose its model: without any server, one ONNX Runtime session in one worker
 * thread vs two sessions in two worker threads (batch 32, intraOpNumThreads 1), plus the cost of a
 * sample at batch 1. A model fit for the bench scales close to 2× on two cores (compute-bound,
 * weights in cache) while costing ≥ 1 ms a sample (so HTTP is not the limit).
 * `node --import ./loader/register.mjs bench/batching/probe-models.ts` from the repository root.
 */
await probeAll();

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
    const job = { modelPath, inputSize: 256, durationMs };
    const [one] = await runPlainOrt(1, { ...job, batch: 32 });
    const two = await runPlainOrt(2, { ...job, batch: 32 });
    const [single] = await runPlainOrt(1, { ...job, batch: 1 });
    const twoRate = two.reduce((s, r) => s + r.rate, 0);
    console.log(
      `| ${model.description} | ${(1e6 / one!.rate).toFixed(0)} | ${(1e6 / single!.rate).toFixed(0)} | ` +
        `${(one!.rate / single!.rate).toFixed(2)}× | ${(twoRate / one!.rate).toFixed(2)}× | ` +
        `${((one!.rate * model.flopsPerSample) / 1e9).toFixed(1)} | ${one!.meanAbs.toExponential(2)} |`,
    );
  }
  console.log(`load average after: ${loadAverage()}`);
}
