import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readTextModelFolder } from '../../src/text/model-folder.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { writeBertEncoder } from '../../test/fixtures/text/text-model-folders.js';
import { measureCpuShare } from '../batching/cpu-share.js';
import { startServer, stopServer } from '../lib/load.js';
import { loadAverage, processCpuMs } from '../lib/process-stats.js';
import { InProcessEmbedder, type BatchRunResult, type ForwardBatchPolicy } from './in-process-embedder.js';
import { LONGEST, mixedTexts, SHORTEST } from './mixed-texts.js';
import { probeHealth, summarize, type ProbeSummary } from './health-probe.js';
import { cpuSplit, threads } from './thread-stats.js';
import { WIDE_BATCH, WIDE_CLIENTS, WIDE_TOKENS, WIDE_WIDTH, writeWideEmbedder } from './wide-embedder.js';

/**
 * Issue 15's text benchmark, all in one run on one machine, on a BERT-shaped embedder big enough
 * that its forward pass sets the rate (MiniLM's width: hidden 384, intermediate 1536; BENCH_LAYERS
 * layers, default 4; one attention head, as the fixture graph builder writes, which costs the same
 * multiply-adds as 12 heads of 32), served from a no-code folder by `serve-fn start`:
 * (1) served on /v1/embeddings, one text a request from 64 keep-alive connections (embed-load.ts, a
 *     second process) vs the same ONNX file run in this process on the batches the same policy forms;
 * (2) serve-fn's token-budget batching (--max-batch-tokens 16384, each batch the oldest text and the
 *     queued texts nearest its length) vs fixed-size batches of 32 first come, first served
 *     (--max-batch-requests 32 with an unbounded budget, --batch-by-length false), served and
 *     in-process, beside TEI's policy (the token budget first come, first served) and what a static
 *     [32, 256] batch (every row padded to the longest allowed) costs.
 * (3) issue 24's probe: `/health/live` latency on a wide (1024) mean-pooled embedder, idle and then
 *     saturated by 8 clients posting 32 × 500-token /embed batches (embed-load.ts, a second
 *     process), side by side: the HTTP thread pads and pools nothing, so the two should match.
 * The texts are a fixed seeded list whose lengths spread evenly over 8–256 tokens. The measurements
 * alternate over BENCH_ROUNDS rounds, so other work on this shared machine lands on all of them, and
 * each reports the CPU time per token of the process doing the work beside tokens/s.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const out = join(root, '.bench-out', 'text');
const durationS = Number(process.env.DURATION_S ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const layers = Number(process.env.BENCH_LAYERS ?? 4);
const connections = 64;
/** (3): the wide embedder's layers (wide-embedder.ts has its width, clients and batches). */
const wideLayers = Number(process.env.BENCH_WIDE_LAYERS ?? 1);
const fixedRows = 32;
/** The fixed-size policy's budget: never reached, so only the row count closes a batch. */
const unbounded = 1 << 30;
/** serve-fn's default: the token budget, each batch the oldest text and the queued ones nearest its length. */
const budgetPolicy: ForwardBatchPolicy = { maxBatchTokens: 16384, batchByLength: true };
/** TEI's: the token budget, first come, first served. */
const firstComePolicy: ForwardBatchPolicy = { maxBatchTokens: 16384, batchByLength: false };
/** A plain dynamic batcher's: 32 rows first come, first served. */
const fixedPolicy: ForwardBatchPolicy = { maxBatchTokens: unbounded, maxBatchRequests: fixedRows, batchByLength: false };

mkdirSync(out, { recursive: true });
const dir = join(out, `bert-384x${layers}`);
writeBertEncoder(dir, { hidden: 384, intermediate: 1536, layers, positions: LONGEST, maxSeqLength: LONGEST, pooling: 'mean', normalize: true });
// The fixture tokenizer's tokenizer_config.json says 128 tokens; this model takes LONGEST, as an export of one would say.
const tokenizerConfig = join(dir, 'tokenizer_config.json');
writeFileSync(tokenizerConfig, JSON.stringify({ ...JSON.parse(readFileSync(tokenizerConfig, 'utf8')), model_max_length: LONGEST }, null, 2));
const folder = readTextModelFolder(dir);
if (folder.maxInputLength < LONGEST) throw new Error(`the bench model takes ${folder.maxInputLength} tokens, so the server would cut the longest texts`);
const tokenizer = await TextTokenizer.fromFile(folder.tokenizerFile);
const { texts, lengths } = await mixedTexts(tokenizer, 512, 15);
const bodiesFile = join(out, 'bodies.jsonl');
writeFileSync(bodiesFile, texts.map((input) => JSON.stringify({ model: folder.name, input, encoding_format: 'float' })).join('\n') + '\n');
const sequences = await Promise.all(texts.map(async (text) => {
  const encoding = await tokenizer.encode(text);
  return { ids: encoding.ids, typeIds: encoding.typeIds };
}));
const meanLength = lengths.reduce((s, n) => s + n, 0) / lengths.length;

const wide = await writeWideEmbedder(out, wideLayers, texts, tokenizer);

interface Measured {
  readonly tokensPerS: number;
  readonly requestsPerS: number;
  readonly p50?: number;
  readonly p99?: number;
  readonly failed?: number;
  readonly meanRows?: number;
  readonly paddingEfficiency?: number;
  readonly othersPct: number;
  /** CPU time of the process doing the work (the server, every thread; or this one) per 1,000 tokens: steadier than tokens/s when other jobs share the cores. */
  readonly cpuMsPerKiloToken: number;
  /** Served only, per 1,000 tokens: the server's CPU by thread (thread-stats.ts), and the load generator's own. */
  readonly split?: { readonly http: number; readonly instances: number; readonly others: number; readonly load: number };
}

/** Sums of the server's te_* histograms that tell what forward batches it formed. */
async function batchCounters(base: string): Promise<{ batches: number; rows: number; padded: number; real: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const sum = (metric: string): number => text.split('\n').filter((line) => line.startsWith(`${metric}{`) || line.startsWith(`${metric} `)).reduce((s, line) => s + Number(line.split(' ').at(-1)), 0);
  return { batches: sum('te_batch_next_size_count'), rows: sum('te_batch_next_size_sum'), padded: sum('te_batch_next_tokens_sum'), real: sum('te_request_input_length_sum') };
}

const servers: ChildProcess[] = [];
const serverAt = new Map<string, ChildProcess>();

async function startEmbedder(port: number, flags: readonly string[]): Promise<string> {
  const base = `http://127.0.0.1:${port}`;
  const proc = await startServer([join(root, 'bin/serve-fn.js'), 'start', dir, '--host', '127.0.0.1', '--port', String(port), '--no-grpc', ...flags], `${base}/health/ready`, { SERVE_FN_LOG_LEVEL: 'warn' });
  servers.push(proc);
  serverAt.set(base, proc);
  return base;
}

const register = join(root, 'loader/register.mjs');
const run = promisify(execFile);

async function served(base: string, seconds = durationS): Promise<Measured> {
  const cpu = measureCpuShare(servers.map((p) => p.pid!));
  const pid = serverAt.get(base)!.pid!;
  const cpuBefore = processCpuMs(pid);
  const threadsBefore = threads(pid);
  const before = await batchCounters(base);
  const { stdout } = await run(process.execPath, ['--import', register, join(root, 'bench/text/embed-load.ts'), `${base}/v1/embeddings`, bodiesFile, String(connections), String(seconds)]);
  const split = cpuSplit(pid, threadsBefore, threads(pid));
  const after = await batchCounters(base);
  const r = JSON.parse(stdout) as { tokens: number; requests: number; failed: number; seconds: number; p50: number; p99: number; cpuMs: number };
  const perKilo = (ms: number): number => (ms * 1000) / r.tokens;
  return {
    tokensPerS: r.tokens / r.seconds, requestsPerS: r.requests / r.seconds, p50: r.p50, p99: r.p99, failed: r.failed,
    meanRows: (after.rows - before.rows) / (after.batches - before.batches), paddingEfficiency: (after.real - before.real) / (after.padded - before.padded),
    othersPct: cpu().othersPct, cpuMsPerKiloToken: perKilo(processCpuMs(pid) - cpuBefore),
    split: { http: perKilo(split.http), instances: perKilo(split.instances), others: perKilo(split.others), load: perKilo(r.cpuMs) },
  };
}

/** The largest difference between the served embedding of a text and the in-process one: both sides compute the same thing. */
async function largestDifference(base: string, embedder: InProcessEmbedder): Promise<number> {
  const response = await fetch(`${base}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: folder.name, input: texts[0], encoding_format: 'float' }) });
  const servedVector = ((await response.json()) as { data: { embedding: number[] }[] }).data[0]!.embedding;
  const [local] = await embedder.embed([sequences[0]!], budgetPolicy);
  return Math.max(...servedVector.map((v, i) => Math.abs(v - local![i]!)));
}

async function inProcess(embedder: InProcessEmbedder, policy: ForwardBatchPolicy): Promise<Measured> {
  const cpu = measureCpuShare(servers.map((p) => p.pid!));
  const ownBefore = ownCpuMs();
  const r: BatchRunResult = await embedder.backToBack(sequences, policy, connections, durationS);
  return { ...r, othersPct: cpu().othersPct, cpuMsPerKiloToken: ((ownCpuMs() - ownBefore) * 1000) / (r.tokensPerS * r.seconds) };
}

/** A fixed batch of 32 padded to 256 whatever its texts: real tokens it carries (32 × the mean length) per second. */
async function staticBatch(embedder: InProcessEmbedder): Promise<Measured> {
  const cpu = measureCpuShare(servers.map((p) => p.pid!));
  const one = await embedder.staticBatchSeconds(fixedRows, LONGEST, 1);
  const runs = Math.max(3, Math.round(durationS / one));
  const ownBefore = ownCpuMs();
  const seconds = await embedder.staticBatchSeconds(fixedRows, LONGEST, runs);
  const cpuMsPerKiloToken = ((ownCpuMs() - ownBefore) * 1000) / (runs * fixedRows * meanLength);
  return { tokensPerS: (fixedRows * meanLength) / seconds, requestsPerS: fixedRows / seconds, meanRows: fixedRows, paddingEfficiency: meanLength / LONGEST, othersPct: cpu().othersPct, cpuMsPerKiloToken };
}

/**
 * (3): the probe on the idle server, then while WIDE_CLIENTS clients of another process keep its
 * forward queue full; the saturated probe starts once the first batches are running, and the load
 * stops with it (a batch of that model takes seconds here, so waiting for the last would add nothing).
 */
async function healthIdleAndSaturated(base: string, seconds: number): Promise<{ idle: ProbeSummary; saturated: ProbeSummary }> {
  const idle = summarize(await probeHealth(base, seconds));
  const load = spawn(process.execPath, ['--import', register, join(root, 'bench/text/embed-load.ts'), `${base}/embed`, wide.bodiesFile, String(WIDE_CLIENTS), String(3600)], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return { idle, saturated: summarize(await probeHealth(base, seconds)) };
  } finally {
    load.kill();
  }
}

const ownCpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const mean = (values: readonly number[]): number => values.reduce((s, v) => s + v, 0) / values.length;
const f = (n: number | undefined): string => (n === undefined ? '' : n.toFixed(0));
const x2 = (n: number): string => `${n.toFixed(2)}×`;

const loadBefore = loadAverage();
const embedder = await InProcessEmbedder.create(folder.modelFile, tokenizer.padId);
const kinds = [
  'in-process, token budget by length', 'served, token budget by length (default)', 'served, fixed 32', 'in-process, fixed 32',
  'served, token budget first come (TEI)', 'in-process, token budget first come', 'in-process, static [32, 256]',
] as const;
let difference = Number.NaN;
let health: Awaited<ReturnType<typeof healthIdleAndSaturated>> | undefined;
const runs: Record<(typeof kinds)[number], Measured[]> = Object.fromEntries(kinds.map((k) => [k, []])) as never;
try {
  const budget = await startEmbedder(8451, []);
  const fixed = await startEmbedder(8452, ['--max-batch-requests', String(fixedRows), '--max-batch-tokens', String(unbounded), '--batch-by-length', 'false']);
  const firstCome = await startEmbedder(8453, ['--batch-by-length', 'false']);
  difference = await largestDifference(budget, embedder);
  for (const base of [budget, fixed, firstCome]) await served(base, 3);
  await embedder.backToBack(sequences, budgetPolicy, connections, 2);
  for (let round = 0; round < rounds; round++) {
    runs['in-process, token budget by length'].push(await inProcess(embedder, budgetPolicy));
    runs['served, token budget by length (default)'].push(await served(budget));
    runs['served, fixed 32'].push(await served(fixed));
    runs['in-process, fixed 32'].push(await inProcess(embedder, fixedPolicy));
    runs['served, token budget first come (TEI)'].push(await served(firstCome));
    runs['in-process, token budget first come'].push(await inProcess(embedder, firstComePolicy));
    runs['in-process, static [32, 256]'].push(await staticBatch(embedder));
  }
  // The other servers are stopped first, so the probe measures the wide embedder alone.
  await Promise.all(servers.splice(0).map(stopServer));
  const wideBase = `http://127.0.0.1:8454`;
  servers.push(await startServer([join(root, 'bin/serve-fn.js'), 'start', wide.dir, '--host', '127.0.0.1', '--port', '8454', '--no-grpc'], `${wideBase}/health/ready`, { SERVE_FN_LOG_LEVEL: 'warn' }));
  health = await healthIdleAndSaturated(wideBase, durationS);
} finally {
  await Promise.all(servers.map(stopServer));
  await embedder.release();
}
const loadAfter = loadAverage();

const values = (kind: (typeof kinds)[number], key: keyof Measured): number[] => runs[kind].map((m) => m[key]).filter((v): v is number => v !== undefined);
const avg = (kind: (typeof kinds)[number], key: keyof Measured): number | undefined => (values(kind, key).length === 0 ? undefined : mean(values(kind, key)));
const worst = (kind: (typeof kinds)[number], key: keyof Measured): number | undefined => (values(kind, key).length === 0 ? undefined : Math.max(...values(kind, key)));
const total = (kind: (typeof kinds)[number], key: keyof Measured): number | undefined => (values(kind, key).length === 0 ? undefined : values(kind, key).reduce((s, v) => s + v, 0));
const tokens = (kind: (typeof kinds)[number]): number => avg(kind, 'tokensPerS')!;

console.log(`${folder.name}: BERT encoder, hidden 384, ${layers} layers, intermediate 1536, 1 head, mean pooling + Normalize; ONNX Runtime CPU, intraOpNumThreads ${availableParallelism()} (1 instance)`);
console.log(`${texts.length} texts of ${SHORTEST}–${LONGEST} tokens (mean ${meanLength.toFixed(1)}), one a request to POST /v1/embeddings; ${connections} keep-alive connections (embed-load.ts, closed loop); ${rounds} rounds of ${durationS} s per measurement`);
console.log(`load average (1, 5, 15 min): ${loadBefore} before, ${loadAfter} after`);
// The served instance yields to other processes' nice-0 work, the in-process side does not: on a shared machine compare CPU per token.
console.log(`served instances at niceness ${process.env.SERVE_FN_INSTANCE_NICENESS || '10 (serve-fn start)'}; the in-process side at this process's own`);
console.log(`served vs in-process embedding of the same text: largest difference ${difference.toExponential(1)}\n`);
console.log('| what | tokens/s (mean of rounds) | requests/s | p50 ms | p99 ms (worst round) | rows per batch | real / padded tokens | CPU ms per 1k tokens | failed |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const kind of kinds) {
  const eff = avg(kind, 'paddingEfficiency');
  console.log(`| ${kind} | ${f(tokens(kind))} | ${avg(kind, 'requestsPerS')!.toFixed(1)} | ${f(avg(kind, 'p50'))} | ${f(worst(kind, 'p99'))} | ${avg(kind, 'meanRows')?.toFixed(1) ?? ''} | ${eff === undefined ? '' : `${(eff * 100).toFixed(0)} %`} | ${f(avg(kind, 'cpuMsPerKiloToken'))} | ${total(kind, 'failed') ?? ''} |`);
}
console.log('');
console.log('Per round, tokens/s; "others" is the CPU (% of one core) other processes took during each measurement, the load generator included.\n');
console.log(`| round | ${kinds.join(' | ')} | others % | (1) served / in-process | (2) budget / fixed, served | budget / fixed, in-process |`);
console.log(`|${'---|'.repeat(kinds.length + 5)}`);
for (let i = 0; i < rounds; i++) {
  const t = kinds.map((k) => runs[k][i]!);
  const [ib, sb, sf, ifx] = t.map((m) => m.tokensPerS);
  console.log(`| ${i + 1} | ${t.map((m) => f(m.tokensPerS)).join(' | ')} | ${t.map((m) => f(m.othersPct)).join(', ')} | ${x2(sb! / ib!)} | ${x2(sb! / sf!)} | ${x2(ib! / ifx!)} |`);
}
console.log('');
const cpuPerToken = (kind: (typeof kinds)[number]): number => avg(kind, 'cpuMsPerKiloToken')!;
const ratio = (a: (typeof kinds)[number], b: (typeof kinds)[number]): string => `${x2(tokens(a) / tokens(b))} (by CPU time per token ${x2(cpuPerToken(b) / cpuPerToken(a))})`;
console.log(`(1) served / in-process, token budget by length: ${ratio('served, token budget by length (default)', 'in-process, token budget by length')} (target ≥ 0.95×)`);
console.log(`(2) token budget by length / fixed 32, served: ${ratio('served, token budget by length (default)', 'served, fixed 32')}; in-process: ${ratio('in-process, token budget by length', 'in-process, fixed 32')} (target ≥ 1.3×)`);
console.log(`    token budget first come (TEI's policy) / fixed 32, served: ${ratio('served, token budget first come (TEI)', 'served, fixed 32')}; in-process: ${ratio('in-process, token budget first come', 'in-process, fixed 32')}`);
console.log(`    in-process, token budget by length / static [32, 256]: ${ratio('in-process, token budget by length', 'in-process, static [32, 256]')}`);
console.log('');
console.log('Served, CPU ms per 1,000 tokens by thread (mean of rounds): the HTTP thread, the instance threads (at the instance niceness: the worker and ONNX Runtime\'s pool), the server\'s other threads (libuv\'s pool running the tokenizer, V8\'s helpers), and the load generator (a process of its own, which the in-process side does not have).\n');
console.log('| what | HTTP thread | instance threads | other threads | load generator |');
console.log('|---|---|---|---|---|');
for (const kind of kinds.filter((k) => k.startsWith('served'))) {
  const part = (key: 'http' | 'instances' | 'others' | 'load'): string => f(mean(runs[kind].map((m) => m.split![key])));
  console.log(`| ${kind} | ${part('http')} | ${part('instances')} | ${part('others')} | ${part('load')} |`);
}
if (health) {
  const { idle, saturated } = health;
  console.log('');
  console.log(`(3) /health/live, wide embedder (hidden ${WIDE_WIDTH}, ${wideLayers} layer(s), mean pooling), idle vs saturated by ${WIDE_CLIENTS} clients posting ${WIDE_BATCH} × ~${WIDE_TOKENS}-token /embed batches:`);
  console.log('| probe | p50 ms | p99 ms | max ms | probes |');
  console.log('|---|---|---|---|---|');
  for (const [what, p] of [['idle', idle], ['saturated', saturated]] as const) console.log(`| ${what} | ${p.p50.toFixed(1)} | ${p.p99.toFixed(1)} | ${p.max.toFixed(1)} | ${p.count} |`);
  console.log(`    saturated p99 − idle p99: ${(saturated.p99 - idle.p99).toFixed(1)} ms (target ≤ 5 ms)`);
}
