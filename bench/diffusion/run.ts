import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { DiffusionMetrics } from '../../src/diffusion/diffusion-metrics.js';
import { DiffusionPipeline } from '../../src/diffusion/diffusion-pipeline.js';
import { readDiffusionFolder } from '../../src/diffusion/pipeline-folder.js';
import type { StepLimits } from '../../src/diffusion/step-scheduler.js';
import { createError } from '../../src/errors/index.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { writeDiffusionFolder } from '../../test/helpers/diffusion-fixture.js';

/**
 * Issue 28's benchmark, side by side in one run: a tiny diffusers-style folder (the tests' random
 * conv denoiser, text encoder and VAE, each on a worker-thread ONNX Runtime instance) at
 * BENCH_SIZE px (default 256, a 32×32 latent), without guidance, under three denoiser schedulers:
 * - step: step-level batching (requests join and leave the batch between steps), --max-num-seqs 8;
 * - one: one request at a time (max 1 running);
 * - waves: request-level batching (requests batched only when they start together, vLLM-Omni's REQUEST_BATCH).
 * (1) images/s with 8 concurrent clients, each sending requests of 4, 8, 12, 20 steps in turn;
 * (2) p50/p99 latency of 4-step requests sent one after another while 7 clients keep 20-step requests running.
 * Modes alternate over BENCH_ROUNDS rounds so other work on the machine lands on all of them.
 */
const size = Number(process.env.BENCH_SIZE ?? 256);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const perClient = Number(process.env.BENCH_REQUESTS ?? 4);
const modes: Record<string, StepLimits> = {
  step: { maxRunning: 8, admissionWaitUs: 2000 },
  one: { maxRunning: 1, admissionWaitUs: 0 },
  waves: { maxRunning: 8, admissionWaitUs: 2000, wavesOnly: true },
};

const dir = writeDiffusionFolder(join(mkdtempSync(join(tmpdir(), 'bench-diffusion-')), 'bench-dit'), { denoiser: 'conv' });
// BENCH_VAE_INSTANCES: the VAE stage's instance count (its folder's config.pbtxt, docs/diffusion.md), 1 by default.
const vaeInstances = Number(process.env.BENCH_VAE_INSTANCES ?? 1);
if (vaeInstances > 1) writeFileSync(join(dir, 'vae_decoder', 'config.pbtxt'), `instance_group [ { count: ${vaeInstances}, kind: KIND_CPU } ]\n`);

async function load(limits: StepLimits, recorder: InferenceRecorder): Promise<DiffusionPipeline> {
  const ctx = {
    recorder, log: () => undefined, infer: () => Promise.reject(new Error('unused')),
    resolve: (name: string): never => {
      throw createError('SF_ERR_MODEL_UNKNOWN', name);
    },
  };
  const pipeline = await DiffusionPipeline.load(readDiffusionFolder(dir), 'bench-dit', ctx, limits, new DiffusionMetrics(new Registry()));
  await pipeline.start();
  return pipeline;
}

const generate = (p: DiffusionPipeline, steps: number, seed: number) => p.generate({ prompt: 'a red fox', width: size, height: size, steps, guidanceScale: 1, seed });

async function throughput(p: DiffusionPipeline): Promise<number> {
  const mix = [4, 8, 12, 20];
  const started = performance.now();
  await Promise.all(Array.from({ length: 8 }, async (_, client) => {
    for (let i = 0; i < perClient; i++) await generate(p, mix[(client + i) % mix.length], client * 100 + i);
  }));
  return (8 * perClient) / ((performance.now() - started) / 1000);
}

async function shortLatency(p: DiffusionPipeline): Promise<number[]> {
  let running = true;
  const background = Array.from({ length: 7 }, async (_, client) => {
    for (let i = 0; running; i++) await generate(p, 20, client * 1000 + i);
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const latencies: number[] = [];
  for (let i = 0; i < 12; i++) {
    const t = performance.now();
    await generate(p, 4, 9000 + i);
    latencies.push(performance.now() - t);
  }
  running = false;
  await Promise.all(background);
  return latencies;
}

const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** Milliseconds of each stage's compute (nv_inference_compute_infer, summed over requests) per image, since `base`. */
function stageMsPerImage(recorder: InferenceRecorder, base: ReturnType<InferenceRecorder['statistics']>, images: number): Record<string, number> {
  return Object.fromEntries(recorder.statistics().model_stats.map((m) => {
    const before = base.model_stats.find((b) => b.name === m.name)!.inference_stats.compute_infer.ns;
    return [m.name.replace('bench-dit_', ''), (m.inference_stats.compute_infer.ns - before) / 1e6 / images];
  }));
}

const results: Record<string, { ips: number[]; latency: number[]; stages: Record<string, number>[] }> = Object.fromEntries(Object.keys(modes).map((m) => [m, { ips: [], latency: [], stages: [] }]));
for (let round = 0; round < rounds; round++) {
  for (const [mode, limits] of Object.entries(modes)) {
    const recorder = new InferenceRecorder({ collectProcessMetrics: false });
    const p = await load(limits, recorder);
    try {
      await generate(p, 2, 1);
      const base = recorder.statistics();
      results[mode].ips.push(await throughput(p));
      results[mode].stages.push(stageMsPerImage(recorder, base, 8 * perClient));
      results[mode].latency.push(...(await shortLatency(p)));
    } finally {
      await p.stop();
    }
  }
}
rmSync(dir, { recursive: true, force: true });
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(`| scheduler | images/s, 8 clients, 4/8/12/20 steps (${size}px, ${vaeInstances} VAE instance${vaeInstances > 1 ? 's' : ''}) | 4-step p50 ms under 20-step load | p99 ms |`);
console.log('|---|---|---|---|');
for (const [mode, r] of Object.entries(results)) {
  console.log(`| ${mode} | ${mean(r.ips).toFixed(2)} (rounds: ${r.ips.map((x) => x.toFixed(2)).join(', ')}) | ${quantile(r.latency, 0.5).toFixed(0)} | ${quantile(r.latency, 0.99).toFixed(0)} |`);
}
console.log(`\nCompute per image in the throughput runs (ms of nv_inference_compute_infer, which each request of a batch counts in full, per image):`);
for (const [mode, r] of Object.entries(results)) {
  const stages = Object.keys(r.stages[0]);
  console.log(`${mode}: ${stages.map((stage) => `${stage} ${mean(r.stages.map((s) => s[stage])).toFixed(1)}`).join(', ')}`);
}
console.log(`step / one = ${(mean(results.step.ips) / mean(results.one.ips)).toFixed(2)}×, step / waves = ${(mean(results.step.ips) / mean(results.waves.ips)).toFixed(2)}×`);
