import { execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as ort from 'onnxruntime-node';
import { startServer, stopServer } from '../lib/load.js';
import { loadAverage } from '../lib/process-stats.js';
import { wrk } from '../lib/wrk.js';
import { INPUT_SIZE, MAX_BATCH, OUTPUT_SIZE } from './mlp-model.js';
import { measureCpuShare } from './cpu-share.js';
import { plainOrtRate } from './plain-ort.js';
import { buildSharedWeightMlp } from './shared-weight-mlp.js';

/**
 * Issue 3's batching benchmark, all in one run on one machine:
 * (a) served, batched, 1 instance vs the same model run back-to-back in-process at batch MAX_BATCH;
 * (b) batching on vs off; (c) 2 instances vs 1, read against what 2 plain ONNX Runtime threads reach over 1
 * (plain-ort.ts: the same ONNX, intraOpNumThreads 1, batch MAX_BATCH, in this process); (d) /health/live p99 while the model is saturated (1 and
 * 2 instances, in runs of their own so the probe's CPU does not touch (a)–(c)), probed from a process
 * of its own in turn with an idle reference server (reference-server.ts): the machine's floor under
 * the same load. The load comes from wrk, a second process that takes little of the two cores.
 * The model is a deep MLP reusing one 512×512 weight (see shared-weight-mlp.ts and probe-models.ts):
 * its weights fit in a core's L2, so two instances scale on two cores, and a sample costs ~2 ms, so
 * the model, not HTTP, limits the rate.
 * The measurements alternate over BENCH_ROUNDS rounds, so a burst of other work on the machine
 * lands on all of them rather than on one, and each round's ratios are printed to show the spread.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const out = `${root}.bench-out`;
const durationS = Number(process.env.DURATION_S ?? 15);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = 64;

mkdirSync(out, { recursive: true });
const modelPath = `${out}/mlp.onnx`;
const model = buildSharedWeightMlp({
  inputSize: INPUT_SIZE,
  width: Number(process.env.BENCH_WIDTH ?? 512),
  depth: Number(process.env.BENCH_DEPTH ?? 768),
  rows: 1,
  outputSize: OUTPUT_SIZE,
  seed: 7,
});
writeFileSync(modelPath, model.onnx);
const body = JSON.stringify({ x: Array.from({ length: INPUT_SIZE }, (_, i) => Math.sin(i)) });

interface Probe {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly n: number;
}

interface Served {
  readonly rps: number;
  readonly p99: number;
  readonly bad: number;
  /** [served model, reference server], when probed. */
  readonly health?: readonly [Probe, Probe];
  readonly othersPct: number;
}

/** The probe's rounds: [served model, reference] per round. */
type HealthRuns = (readonly [Probe, Probe])[];

async function inProcess(session: ort.InferenceSession, batch: number, seconds: number): Promise<number> {
  const x = new ort.Tensor('float32', new Float32Array(batch * INPUT_SIZE).fill(0.5), [batch, INPUT_SIZE]);
  await session.run({ INPUT0: x });
  let samples = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    await session.run({ INPUT0: x });
    samples += batch;
  }
  return samples / ((performance.now() - start) / 1000);
}

/** Every server started, so a failure part-way still stops the ones already up. */
const servers: ChildProcess[] = [];
const register = `${root}loader/register.mjs`;
const referencePort = 8409;
const run = promisify(execFile);

async function probeHealth(base: string, seconds: number): Promise<[Probe, Probe]> {
  const urls = [`${base}/health/live`, `http://127.0.0.1:${referencePort}/health/live`];
  const { stdout } = await run(process.execPath, ['--import', register, `${root}bench/batching/health-probe.ts`, String(seconds), ...urls]);
  const [model, reference] = JSON.parse(stdout) as Probe[];
  return [model!, reference!];
}

async function startModelServer(instances: number): Promise<string> {
  const port = 8400 + instances;
  const base = `http://127.0.0.1:${port}`;
  const proc = await startServer(
    [`${root}bin/serve-fn.js`, 'start', `${root}bench/batching/mlp-model.ts`, '--host', '127.0.0.1', '--port', String(port), '--no-grpc'],
    `${base}/health/ready`,
    { BENCH_INSTANCES: String(instances), BENCH_MLP_ONNX: modelPath, SERVE_FN_LOG_LEVEL: 'warn' },
  );
  servers.push(proc);
  return base;
}

async function served(base: string, path: string, probe: boolean): Promise<Served> {
  const cpu = measureCpuShare(servers.map((p) => p.pid!));
  // Starts after the load has saturated the model and ends before it stops.
  const health = probe ? new Promise((r) => setTimeout(r, 1000)).then(() => probeHealth(base, durationS - 2)) : undefined;
  const r = await wrk(`${base}${path}`, { connections, durationS, body });
  return { rps: r.rps, p99: r.p99Ms, bad: r.non2xx + r.errors, health: await health, othersPct: cpu().othersPct };
}

const mean = (values: readonly number[]): number => values.reduce((s, v) => s + v, 0) / values.length;
const f = (n: number): string => n.toFixed(0);
const x2 = (n: number): string => `${n.toFixed(2)}×`;
const signed = (ms: number): string => `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(2)}`;

const loadBefore = loadAverage();
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
const single = await inProcess(session, 1, 5);
const limits: number[] = [];
const limitOthersPct: number[] = [];
const plain1: number[] = [];
const plain2: number[] = [];
const plainOthersPct: number[] = [];
const plainJob = { modelPath, batch: MAX_BATCH, inputSize: INPUT_SIZE, durationMs: durationS * 1000 };
const batched1: Served[] = [];
const unbatched1: Served[] = [];
const batched2: Served[] = [];
const health1: HealthRuns = [];
const health2: HealthRuns = [];
let idleHealth: [Probe, Probe] | undefined;
try {
  servers.push(await startServer(['--import', register, `${root}bench/batching/reference-server.ts`, String(referencePort)], `http://127.0.0.1:${referencePort}/health/live`));
  const one = await startModelServer(1);
  const two = await startModelServer(2);
  for (const base of [one, two]) await wrk(`${base}/infer`, { connections, durationS: 3, body });
  await wrk(`${one}/infer-single`, { connections, durationS: 2, body });
  // The same probe with nothing running: how fast the machine answers when idle.
  idleHealth = await probeHealth(one, durationS - 2);
  for (let round = 0; round < rounds; round++) {
    const cpu = measureCpuShare(servers.map((p) => p.pid!));
    limits.push(await inProcess(session, MAX_BATCH, durationS));
    limitOthersPct.push(cpu().othersPct);
    const plainCpu = measureCpuShare(servers.map((p) => p.pid!));
    plain1.push(await plainOrtRate(1, plainJob));
    plain2.push(await plainOrtRate(2, plainJob));
    plainOthersPct.push(plainCpu().othersPct);
    batched1.push(await served(one, '/infer', false));
    unbatched1.push(await served(one, '/infer-single', false));
    batched2.push(await served(two, '/infer', false));
    health1.push((await served(one, '/infer', true)).health!);
    health2.push((await served(two, '/infer', true)).health!);
  }
} finally {
  await Promise.all(servers.map(stopServer));
  await session.release();
}
const loadAfter = loadAverage();

const limit = mean(limits);
const b1 = mean(batched1.map((s) => s.rps));
const u1 = mean(unbatched1.map((s) => s.rps));
const b2 = mean(batched2.map((s) => s.rps));
const p99 = (runs: Served[]): number => Math.max(...runs.map((s) => s.p99));
const bad = (runs: Served[]): number => runs.reduce((sum, s) => sum + s.bad, 0);
const worst = (runs: HealthRuns, which: 0 | 1, key: 'p50' | 'p99'): number => Math.max(...runs.map((h) => h[which][key]));
const probes = (runs: HealthRuns): number => runs.reduce((n, h) => n + h[0].n, 0);

console.log(`${model.description}; ONNX Runtime CPU, intraOpNumThreads 1; ${connections} clients (wrk, 2 threads); ${rounds} rounds of ${durationS} s per measurement`);
console.log(`load average (1, 5, 15 min): ${loadBefore} before, ${loadAfter} after\n`);
console.log('| what | samples/s (mean of rounds) | p99 ms (worst round) | failed |');
console.log('|---|---|---|---|');
console.log(`| in-process, no server, batch ${MAX_BATCH} (the limit) | ${f(limit)} | | |`);
console.log(`| in-process, no server, batch 1 | ${f(single)} | | |`);
console.log(`| served, @Batch(${MAX_BATCH}), 1 instance | ${f(b1)} | ${p99(batched1)} | ${bad(batched1)} |`);
console.log(`| served, no batching, 1 instance | ${f(u1)} | ${p99(unbatched1)} | ${bad(unbatched1)} |`);
console.log(`| served, @Batch(${MAX_BATCH}), 2 instances | ${f(b2)} | ${p99(batched2)} | ${bad(batched2)} |`);
console.log('');
console.log('Per round; "others" is the CPU (% of one core, of 200) that other processes took during each run, wrk included.');
console.log('Health: p99 ms of /health/live on the saturated server / on the idle reference server, probed in turn 100 times a second each,');
console.log('in separate runs with 1 and with 2 instances saturated.\n');
console.log('Plain ORT: 1 and 2 worker threads of this process looping session.run at batch MAX_BATCH, no server; (c) = served 2/1 ÷ plain 2/1.');
console.log('Health: served − reference p99 (target ≤ +1 ms).\n');
console.log('| round | limit | batched, 1 | unbatched, 1 | batched, 2 | others % (limit, plain, b1, u1, b2) | (a) | (b) | served 2/1 | plain 1, 2 threads | plain 2/1 | (c) | health p99 ms, 1 instance | health p99 ms, 2 instances |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
limits.forEach((l, i) => {
  const [b, u, t] = [batched1[i]!, unbatched1[i]!, batched2[i]!];
  const others = [limitOthersPct[i]!, plainOthersPct[i]!, b.othersPct, u.othersPct, t.othersPct].map(f).join(', ');
  const plain = plain2[i]! / plain1[i]!;
  const health = ([served, reference]: readonly [Probe, Probe]): string => `${served.p99} / ${reference.p99} (${signed(served.p99 - reference.p99)})`;
  console.log(
    `| ${i + 1} | ${f(l)} | ${f(b.rps)} | ${f(u.rps)} | ${f(t.rps)} | ${others} | ${x2(b.rps / l)} | ${x2(b.rps / u.rps)} | ` +
      `${x2(t.rps / b.rps)} | ${f(plain1[i]!)}, ${f(plain2[i]!)} | ${x2(plain)} | ${x2(t.rps / b.rps / plain)} | ${health(health1[i]!)} | ${health(health2[i]!)} |`,
  );
});
console.log('');
console.log(`(a) served batched / in-process limit: ${x2(b1 / limit)} (target ≥ 0.9×)`);
console.log(`(b) batching on / off: ${x2(b1 / u1)} (target ≥ 3×)`);
const plainRatio = mean(plain2) / mean(plain1);
console.log(`(c) 2 instances / 1: ${x2(b2 / b1)}; plain ORT 2 threads / 1: ${x2(plainRatio)}; served / plain: ${x2(b2 / b1 / plainRatio)} (target ≥ 0.9×)`);
for (const [label, runs] of [['1 instance', health1], ['2 instances', health2]] as const) {
  console.log(`(d) /health/live while saturated, ${label} (worst round of ${rounds}, ${probes(runs)} probes): p50 ${worst(runs, 0, 'p50')} ms, p99 ${worst(runs, 0, 'p99')} ms (target p99 ≤ the reference's + 1 ms)`);
  console.log(`    the idle reference server, probed in turn: p50 ${worst(runs, 1, 'p50')} ms, p99 ${worst(runs, 1, 'p99')} ms`);
  console.log(`    served − reference p99, worst round: ${signed(Math.max(...runs.map((h) => h[0].p99 - h[1].p99)))} ms`);
}
console.log(`    nothing running: served p99 ${idleHealth?.[0].p99} ms, reference p99 ${idleHealth?.[1].p99} ms`);
