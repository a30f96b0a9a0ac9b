/**
 * bench:generate — continuous batching of a Qwen3-shaped decoder (random weights, written here,
 * never committed) on ONNX Runtime in this process:
 *   1. aggregate tokens/s of 16 concurrent requests of mixed prompt and output lengths through the
 *      iteration-level scheduler, against the same requests one at a time (max_num_seqs 1);
 *   2. TTFT and inter-token latency p50/p99 at 1, 4 and 16 concurrent;
 *   3. single-stream decode tokens/s against the memory-bandwidth bound (weight bytes ÷ bandwidth).
 *   4. the served path (the in-process session takes the server's session options): the same 16 jobs as /v1/completions (token-id prompts, non-streamed) from
 *      this process to `serve-fn start` on the same folder (the built CLI: run `npm run build`
 *      first), against the in-process tokens/s of step 1 (issue 25 asks for at least 0.9×).
 *
 * Size knobs: BENCH_GEN_LAYERS, BENCH_GEN_HIDDEN, BENCH_GEN_VOCAB (default: ~58 M parameters).
 * Scheduler knobs (both sides): BENCH_GEN_MAX_NUM_SEQS (16), BENCH_GEN_MAX_NUM_BATCHED_TOKENS (the
 * server's default). BENCH_GEN_PARTS picks parts: batching, latency, bound, served (all by default;
 * served needs batching). Each rate comes with the CPU time per token (process time of this
 * process, or of the server's), which a loaded machine distorts less than wall time.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { systemClock } from '../../src/engine/clock.js';
import { InThreadTarget } from '../../src/generation/in-thread-target.js';
import { DEFAULT_GENERATOR_LIMITS, generatorSessionOptions } from '../../src/generation/folder-generator.js';
import { IterationScheduler } from '../../src/generation/iteration-scheduler.js';
import type { SamplingParams } from '../../src/generation/text-generator.js';
import { decoderLayout, OnnxDecoderRuntime } from '../../src/instance/onnx-decoder-runtime.js';
import { writeDecoderFolder } from '../../test/fixtures/generation/decoder-folders.js';
import { parameterCount } from '../../test/fixtures/generation/decoder-weights.js';
import { seededRandom } from '../../test/fixtures/text/text-model-weights.js';
import { startCli } from '../../test/e2e/cli-harness.js';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const hidden = env('BENCH_GEN_HIDDEN', 512);
const shape = {
  hidden, layers: env('BENCH_GEN_LAYERS', 12), heads: 8, kvHeads: 4, headDim: 96, intermediate: 3 * hidden, vocab: env('BENCH_GEN_VOCAB', 32000), maxPositions: 4096,
};

const maxNumSeqs = env('BENCH_GEN_MAX_NUM_SEQS', 16);
const maxNumBatchedTokens = env('BENCH_GEN_MAX_NUM_BATCHED_TOKENS', DEFAULT_GENERATOR_LIMITS.maxNumBatchedTokens);
const parts = new Set((process.env.BENCH_GEN_PARTS ?? 'batching,latency,bound,served').split(','));

interface Job { prompt: number[]; maxTokens: number }
/** `cpuSeconds`: process CPU time (user + system, every thread) over the run; `prefillRunSeconds`/`decodeRunSeconds`: wall time inside session.run. */
interface Timings { tokens: number; seconds: number; cpuSeconds: number; ttft: number[]; itl: number[]; prefillRunSeconds?: number; decodeRunSeconds?: number }

/** Wall time inside session.run, by kind of run (a prefill chunk, or a batch of decodes): where a step's time goes. */
const runClock = { prefill: 0, decode: 0 };

const cpuSeconds = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
/** A child's CPU time from /proc/<pid>/stat (utime + stime, in clock ticks of 1/100 s on Linux). */
const childCpuSeconds = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const rate = (t: Timings): string => `${(t.tokens / t.seconds).toFixed(1)} tok/s, ${(t.cpuSeconds * 1000 / t.tokens).toFixed(1)} ms CPU/token${t.decodeRunSeconds === undefined ? '' : ` (session.run: prefill ${t.prefillRunSeconds!.toFixed(1)} s, decode ${t.decodeRunSeconds.toFixed(1)} s of ${t.seconds.toFixed(1)} s)`}`;

function workload(count: number, seed: number): Job[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => ({
    prompt: Array.from({ length: 16 + Math.floor(random() * 112) }, () => 3 + Math.floor(random() * 250)),
    maxTokens: 16 + Math.floor(random() * 48),
  }));
}

const sampling = (maxTokens: number): SamplingParams => ({ temperature: 0, topP: 1, topK: 0, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, maxTokens, minTokens: 0, stopTokenIds: [], ignoreEos: true });

async function inThreadRun(runtime: OnnxDecoderRuntime, jobs: readonly Job[], seqs: number): Promise<Timings> {
  const scheduler = new IterationScheduler('bench', { maxNumSeqs: seqs, maxNumBatchedTokens: Math.max(maxNumBatchedTokens, seqs), kvBlocks: 4096 }, { eosTokenIds: [], maxModelLen: 4096 }, new InThreadTarget(runtime), systemClock);
  const ttft: number[] = [];
  const itl: number[] = [];
  let tokens = 0;
  const started = performance.now();
  const cpu = cpuSeconds();
  const runs = { ...runClock };
  await Promise.all(jobs.map(async (job) => {
    const sequence = scheduler.sequence({ requestId: '', promptTokenIds: job.prompt, sampling: sampling(job.maxTokens) });
    void scheduler.submit(sequence, {});
    let last = performance.now();
    let first = true;
    for await (const chunk of sequence) {
      const now = performance.now();
      if (chunk.tokens.length === 0) continue;
      (first ? ttft : itl).push((now - last) / 1000);
      first = false;
      last = now;
      tokens += chunk.tokens.length;
    }
  }));
  return { tokens, seconds: (performance.now() - started) / 1000, cpuSeconds: cpuSeconds() - cpu, ttft, itl, prefillRunSeconds: runClock.prefill - runs.prefill, decodeRunSeconds: runClock.decode - runs.decode };
}

/** One POST over a keep-alive agent; node:http, as undici's fetch costs the client more CPU than the server spends (see docs/BENCHMARKS.md). */
function post(base: string, path: string, body: unknown, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`${path} answered ${res.statusCode}: ${text}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The jobs as concurrent /v1/completions requests to a running server; tokens from each answer's usage, CPU time the server's. */
async function servedRun(base: string, model: string, jobs: readonly Job[], serverPid: number): Promise<Timings> {
  const agent = new Agent({ keepAlive: true, maxSockets: jobs.length });
  const started = performance.now();
  const cpu = childCpuSeconds(serverPid);
  const counts = await Promise.all(jobs.map(async (job) => {
    const answer = await post(base, '/v1/completions', { model, prompt: job.prompt, max_tokens: job.maxTokens, temperature: 0, ignore_eos: true }, agent);
    return (JSON.parse(answer) as { usage: { completion_tokens: number } }).usage.completion_tokens;
  }));
  agent.destroy();
  return { tokens: counts.reduce((a, b) => a + b, 0), seconds: (performance.now() - started) / 1000, cpuSeconds: childCpuSeconds(serverPid) - cpu, ttft: [], itl: [] };
}

/** One request after another, each alone on the runtime: what a server without continuous batching does. */
async function oneAtATime(runtime: OnnxDecoderRuntime, jobs: readonly Job[]): Promise<Timings> {
  const all: Timings = { tokens: 0, seconds: 0, cpuSeconds: 0, ttft: [], itl: [], prefillRunSeconds: 0, decodeRunSeconds: 0 };
  for (const job of jobs) {
    const t = await inThreadRun(runtime, [job], 1);
    all.tokens += t.tokens;
    all.seconds += t.seconds;
    all.cpuSeconds += t.cpuSeconds;
    all.prefillRunSeconds! += t.prefillRunSeconds!;
    all.decodeRunSeconds! += t.decodeRunSeconds!;
  }
  return all;
}

const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const ms = (seconds: number): string => `${(seconds * 1000).toFixed(0)} ms`;

/** Single-thread read bandwidth: summing a 256 MiB Float32Array (an indicative lower bound of what ORT's threads reach). */
function measuredBandwidth(): number {
  const data = new Float32Array(64 * 2 ** 20).fill(1);
  let best = 0;
  for (let round = 0; round < 3; round++) {
    const start = performance.now();
    let sum = 0;
    for (let i = 0; i < data.length; i++) sum += data[i]!;
    const seconds = (performance.now() - start) / 1000;
    if (sum !== data.length) throw new Error('bandwidth loop optimised away');
    best = Math.max(best, data.byteLength / seconds);
  }
  return best;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-bench-generate-'));
  try {
    const folder = writeDecoderFolder(join(dir, 'qwen3-bench'), { shape, merges: 64 });
    const params = parameterCount(folder.weights.shape);
    const session = await new OnnxBackend().load(join(folder.dir, 'onnx/model.onnx'), { options: generatorSessionOptions() });
    const { inputs, outputs } = session.metadata();
    const runtime = new OnnxDecoderRuntime(decoderLayout('bench', inputs, outputs), async (feeds, names) => {
      const start = performance.now();
      const produced = await session.run(feeds, names);
      runClock[feeds.input_ids!.shape[1]! > 1 ? 'prefill' : 'decode'] += (performance.now() - start) / 1000;
      return produced;
    });
    console.log(`model: Qwen3-shaped, ${(params / 1e6).toFixed(1)} M parameters (${JSON.stringify(shape)}), fp32; ${availableParallelism()} cores; max_num_seqs ${maxNumSeqs}, max_num_batched_tokens ${maxNumBatchedTokens}`);
    await inThreadRun(runtime, workload(2, 99), 2);

    const jobs = workload(16, 1);
    let batchedRate = Number.NaN;
    if (parts.has('batching') || parts.has('served')) {
      const batched = await inThreadRun(runtime, jobs, maxNumSeqs);
      batchedRate = batched.tokens / batched.seconds;
      console.log(`16 mixed requests, continuous batching: ${rate(batched)}`);
    }
    if (parts.has('batching')) {
      const serial = await oneAtATime(runtime, jobs);
      console.log(`16 mixed requests, one at a time: ${rate(serial)}: batching gives ${(batchedRate / (serial.tokens / serial.seconds)).toFixed(2)}×`);
    }

    if (parts.has('latency')) {
      for (const concurrency of [1, 4, 16]) {
        const t = await inThreadRun(runtime, workload(concurrency, 7), concurrency);
        console.log(`concurrency ${concurrency}: ${rate(t)}, TTFT p50 ${ms(percentile(t.ttft, 50))} p99 ${ms(percentile(t.ttft, 99))}, ITL p50 ${ms(percentile(t.itl, 50))} p99 ${ms(percentile(t.itl, 99))}`);
      }
    }

    if (parts.has('bound')) {
      const single = await inThreadRun(runtime, [{ prompt: [5, 6, 7, 8], maxTokens: 64 }], 1);
      const decodeRate = 1 / percentile(single.itl, 50);
      const bandwidth = measuredBandwidth();
      const bound = bandwidth / (params * 4);
      console.log(`single-stream decode ${decodeRate.toFixed(1)} tok/s; bound ${bound.toFixed(1)} tok/s (${(bandwidth / 1e9).toFixed(1)} GB/s single-thread read ÷ ${(params * 4 / 1e6).toFixed(0)} MB of weights): ${(decodeRate / bound * 100).toFixed(0)}% of it`);
    }
    await session.dispose();
    if (!parts.has('served')) return;

    const cli = await startCli(['start', folder.dir, '--host', '127.0.0.1', '--max-num-seqs', String(maxNumSeqs), '--max-num-batched-tokens', String(maxNumBatchedTokens), '--served-model-name', 'bench']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 300_000);
      await servedRun(cli.base, 'bench', workload(2, 99), cli.proc.pid!);
      const served = await servedRun(cli.base, 'bench', jobs, cli.proc.pid!);
      const servedRate = served.tokens / served.seconds;
      console.log(`served (/v1/completions, 16 concurrent, same jobs): ${rate(served)} (the server's CPU), ${(servedRate / batchedRate).toFixed(2)}× the in-process ${batchedRate.toFixed(1)} tok/s`);
    } finally {
      await cli.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
