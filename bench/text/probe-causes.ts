import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTextModelFolder } from '../../src/text/model-folder.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { writeBertEncoder } from '../../test/fixtures/text/text-model-folders.js';
import { startServer, stopServer } from '../lib/load.js';
import { loadAverage, processCpuMs } from '../lib/process-stats.js';
import { probeHealth, summarize, type Probe } from './health-probe.js';
import type { LoopWindow } from './loop-monitor.js';
import { LONGEST, mixedTexts } from './mixed-texts.js';
import { threads, type ThreadSample } from './thread-stats.js';
import { WIDE_CLIENTS, writeWideEmbedder } from './wide-embedder.js';

/**
 * Where bench/text/run.ts part (3)'s probe waits: `/health/live` on the wide mean-pooled embedder,
 * idle and then saturated by WIDE_CLIENTS clients, with the server's HTTP thread watched from the
 * inside (loop-monitor.ts: event-loop delay, GC pauses) and every thread of the server from /proc
 * (CPU time, niceness, and schedstat's time runnable but waiting for a core). Each window prints
 * the probe's latency beside them, and the slow probes (over the idle p99) with the GC pauses that
 * overlapped them, so the saturated probe's extra milliseconds are attributed to a cause.
 * Usage: DURATION_S=6 node --import ./loader/register.mjs bench/text/probe-causes.ts
 * (SERVE_FN_INSTANCE_NICENESS is passed through to the server: unset, `serve-fn start`'s default.)
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const out = join(root, '.bench-out', 'text');
const durationS = Number(process.env.DURATION_S ?? 6);
const register = join(root, 'loader/register.mjs');
mkdirSync(out, { recursive: true });

// The wide model's texts come from the mixed list of run.ts, tokenized by its fixture tokenizer.
const listDir = join(out, 'probe-tokenizer');
writeBertEncoder(listDir, { hidden: 32, intermediate: 32, layers: 1, positions: LONGEST, maxSeqLength: LONGEST, pooling: 'mean', normalize: true });
const tokenizer = await TextTokenizer.fromFile(readTextModelFolder(listDir).tokenizerFile);
const { texts } = await mixedTexts(tokenizer, 512, 15);
const wide = await writeWideEmbedder(out, Number(process.env.BENCH_WIDE_LAYERS ?? 1), texts, tokenizer);

/** Per thread of the server over a window: what changed, the HTTP thread (tid = pid) first. */
function threadDeltas(pid: number, before: Map<number, ThreadSample>, after: Map<number, ThreadSample>): (ThreadSample & { tid: number })[] {
  const rows = [...after].map(([tid, a]) => {
    const b = before.get(tid) ?? { cpuMs: 0, waitMs: 0, slices: 0 };
    return { tid, name: a.name, nice: a.nice, cpuMs: a.cpuMs - b.cpuMs, waitMs: a.waitMs - b.waitMs, slices: a.slices - b.slices };
  });
  return rows.filter((r) => r.tid === pid || r.cpuMs > 0 || r.slices > 0).sort((x, y) => (x.tid === pid ? -1 : y.tid === pid ? 1 : y.cpuMs - x.cpuMs));
}

/** The probing thread's own wait for a core (this process's main thread). */
const ownWaitMs = (): number => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;

async function loopWindow(pid: number, file: string): Promise<LoopWindow> {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as LoopWindow;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error('the server wrote no loop window');
}

interface Window {
  readonly probes: Probe[];
  readonly loop: LoopWindow;
  readonly threads: (ThreadSample & { tid: number })[];
  readonly probeWaitMs: number;
  readonly loadCpuMs?: number;
}

async function measure(pid: number, base: string, file: string, loadPid?: number): Promise<Window> {
  await loopWindow(pid, file);
  const before = threads(pid);
  const waitBefore = ownWaitMs();
  const loadBefore = loadPid === undefined ? 0 : processCpuMs(loadPid);
  const probes = await probeHealth(base, durationS);
  const loop = await loopWindow(pid, file);
  return { probes, loop, threads: threadDeltas(pid, before, threads(pid)), probeWaitMs: ownWaitMs() - waitBefore, loadCpuMs: loadPid === undefined ? undefined : processCpuMs(loadPid) - loadBefore };
}

const f1 = (n: number): string => n.toFixed(1);

function report(what: string, w: Window, slowOver: number): void {
  const p = summarize(w.probes);
  const seconds = (w.loop.toMs - w.loop.fromMs) / 1000;
  const byKind = new Map<string, number[]>();
  for (const g of w.loop.gc) byKind.set(g.kind, [...(byKind.get(g.kind) ?? []), g.ms]);
  console.log(`\n## ${what} (${f1(seconds)} s)`);
  console.log(`probe /health/live: p50 ${f1(p.p50)} / p99 ${f1(p.p99)} / max ${f1(p.max)} ms (${p.count} probes); the probing thread waited ${f1(w.probeWaitMs)} ms for a core in all (${f1(w.probeWaitMs / p.count)} ms a probe)`);
  console.log(`HTTP thread's event-loop delay: p50 ${f1(w.loop.delay.p50)} / p99 ${f1(w.loop.delay.p99)} / max ${f1(w.loop.delay.max)} ms (mean ${f1(w.loop.delay.mean)}, ${w.loop.delay.samples} samples)`);
  console.log(`HTTP thread's GC pauses: ${[...byKind].map(([kind, ms]) => `${kind} ${ms.length} × (total ${f1(ms.reduce((s, v) => s + v, 0))}, max ${f1(Math.max(...ms))} ms)`).join('; ') || 'none'}`);
  if (w.loadCpuMs !== undefined) console.log(`load generator (${WIDE_CLIENTS} clients): ${f1(w.loadCpuMs / 10 / seconds)} % of a core`);
  console.log('| thread | tid | nice | CPU % of a core | waited for a core, ms | times on a core | wait per time on a core, ms |');
  console.log('|---|---|---|---|---|---|---|');
  for (const t of w.threads.slice(0, 12)) {
    console.log(`| ${t.name}${t.tid === w.threads[0]!.tid ? ' (HTTP thread)' : ''} | ${t.tid} | ${t.nice} | ${f1(t.cpuMs / 10 / seconds)} | ${f1(t.waitMs)} | ${t.slices} | ${t.slices === 0 ? '' : (t.waitMs / t.slices).toFixed(2)} |`);
  }
  const slow = w.probes.filter((probe) => probe.ms > slowOver);
  const withGc = slow.map((probe) => ({ probe, gcMs: w.loop.gc.filter((g) => g.startMs < probe.sentMs + probe.ms && g.startMs + g.ms > probe.sentMs).reduce((s, g) => s + g.ms, 0) }));
  console.log(`probes over ${f1(slowOver)} ms (the idle p99): ${slow.length}; with a GC pause of the HTTP thread inside them: ${withGc.filter((s) => s.gcMs > 0).length}, ${f1(withGc.reduce((s, x) => s + x.gcMs, 0))} ms of GC over ${f1(slow.reduce((s, x) => s + x.ms - slowOver, 0))} ms beyond ${f1(slowOver)}`);
  console.log(`slowest: ${withGc.sort((a, b) => b.probe.ms - a.probe.ms).slice(0, 8).map((s) => `${f1(s.probe.ms)} ms (GC ${f1(s.gcMs)})`).join(', ')}`);
}

const port = 8455;
const base = `http://127.0.0.1:${port}`;
const monitorFile = join(out, 'loop-window.json');
const server = await startServer(['--import', register, '--import', join(root, 'bench/text/loop-monitor.ts'), join(root, 'bin/serve-fn.js'), 'start', wide.dir, '--host', '127.0.0.1', '--port', String(port), '--no-grpc'], `${base}/health/ready`, { SERVE_FN_LOG_LEVEL: 'warn', LOOP_MONITOR_OUT: monitorFile });
const pid = server.pid!;
console.log(`load average before: ${loadAverage()}; SERVE_FN_INSTANCE_NICENESS=${process.env.SERVE_FN_INSTANCE_NICENESS ?? '(unset: serve-fn start sets 10)'}`);
try {
  const idle = await measure(pid, base, monitorFile);
  const load = spawn(process.execPath, ['--import', register, join(root, 'bench/text/embed-load.ts'), `${base}/embed`, wide.bodiesFile, String(WIDE_CLIENTS), String(3600)], { stdio: 'ignore' });
  try {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const saturated = await measure(pid, base, monitorFile, load.pid);
    const idleP99 = summarize(idle.probes).p99;
    report('idle', idle, idleP99);
    report('saturated', saturated, idleP99);
    console.log(`\nsaturated p99 − idle p99: ${f1(summarize(saturated.probes).p99 - idleP99)} ms (target ≤ 5 ms)`);
  } finally {
    load.kill();
  }
} finally {
  await stopServer(server);
  console.log(`load average after: ${loadAverage()}`);
}
