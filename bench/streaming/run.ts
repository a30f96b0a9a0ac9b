import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startServer, stopServer } from '../lib/load.js';
import { streamPcm, wavToPcm16k } from '../../examples/streaming-asr/client.js';
import { loadAverage, PeakRss, processCpuMs, processRssKiB, runQueueWaitMs, threadCpuMs } from '../lib/process-stats.js';
import { CHUNK_MS, FRAME_MS, runRealtimeSession, type RealtimeSessionResult } from './realtime-asr-session.js';

/**
 * Issue 6's streaming benchmark: N WebSocket sessions streaming speech in real time to the
 * streaming-asr example (`serve-fn start examples/streaming-asr` in a second process: 2 instances,
 * Silero VAD on every 32 ms window, the FunASR adapter), loaded from this process. Each session
 * sends test/fixtures/vad/speech.wav over and over as utterances of one connection, in 60 ms frames
 * (chunk_size [5, 10, 5]: a partial per 600 ms chunk of speech), on a fixed real-time schedule;
 * session starts are spread over one frame period, so frames reach the server evenly rather than
 * in bursts. Every step of SESSION_STEPS gets a fresh server, so memory and CPU are its own.
 *
 * A step is sustained when no session saw an error or an early close, every utterance got its
 * final reply, no frame was sent more than one chunk (600 ms) behind its schedule (else this
 * process, not the server, failed to keep real time), and the p99 partial latency is at most
 * LATENCY_BOUND_MS.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const pcm = wavToPcm16k(readFileSync(new URL('../../test/fixtures/vad/speech.wav', import.meta.url)));
const steps = (process.env.SESSION_STEPS ?? process.env.SESSIONS ?? '100').split(',').map(Number);
const durationS = Number(process.env.DURATION_S ?? 20);
const mode = (process.env.MODE ?? '2pass') as 'online' | '2pass';
const latencyBoundMs = Number(process.env.LATENCY_BOUND_MS ?? 1000);
const port = Number(process.env.PORT ?? 8331);
const url = `ws://127.0.0.1:${port}/ws/asr`;
if (mode !== 'online' && mode !== '2pass') throw new Error(`MODE must be online or 2pass, not '${mode}'`);

/** Every session's figures pooled, plus the server's and this process's. */
interface StepResult extends RealtimeSessionResult {
  readonly sessions: number;
  readonly serverLoopP99Ms: number;
  readonly serverLoopMaxMs: number;
  readonly clientLoopP99Ms: number;
  /** This process, the load generator, shares the CPUs with the server. */
  readonly clientCpuPercent: number;
  readonly serverCpuPercent: number;
  /** The three busiest server threads' CPU %: one at 100 is an instance (or the main thread) out of core. */
  readonly busiestThreadsPercent: number[];
  /** Server threads' time runnable but not running, summed over threads, as % of the wall time. */
  readonly runQueueWaitPercent: number;
  readonly idleRssKiB: number;
  readonly peakRssKiB: number;
  readonly loadBefore: string;
  readonly loadAfter: string;
}

/** Nearest-rank percentile. */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

/** The server's main-thread event-loop delay since the previous scrape (prom-client resets it on each). */
async function serverLoopDelayMs(): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const read = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) * 1000;
  return { p99: read('nodejs_eventloop_lag_p99_seconds'), max: read('nodejs_eventloop_lag_max_seconds') };
}

async function runStep(sessions: number): Promise<StepResult> {
  const proc = await startServer(
    [`${root}bin/serve-fn.js`, 'start', `${root}examples/streaming-asr`, '--host', '127.0.0.1', '--port', String(port), '--grpc-port', '0'],
    `http://127.0.0.1:${port}/health/ready`,
    { SERVE_FN_LOG_LEVEL: 'warn' },
  );
  const pid = proc.pid!;
  try {
    // Both instances' ONNX sessions and the adapter's code paths run once before anything is measured.
    await Promise.all(Array.from({ length: 4 }, () => streamPcm(url, pcm, { mode, speed: 0 })));
    await new Promise((r) => setTimeout(r, 1000));
    const loadBefore = loadAverage();
    const idleRssKiB = processRssKiB(pid);
    const peak = new PeakRss(pid, 200);
    await serverLoopDelayMs();
    const clientLoop = monitorEventLoopDelay({ resolution: 10 });
    clientLoop.enable();
    const cpuStart = processCpuMs(pid);
    const clientCpuStart = process.cpuUsage();
    const threadsStart = threadCpuMs(pid);
    const waitStart = runQueueWaitMs(pid);
    // Time to open every connection before the first frame is due.
    const startAt = performance.now() + 1000 + 10 * sessions;
    const results: RealtimeSessionResult[] = await Promise.all(Array.from({ length: sessions }, (_, i) =>
      runRealtimeSession({ url, pcm, mode, durationS, startAt: startAt + (i * FRAME_MS) / sessions, name: `s${i}` })));
    const wallMs = performance.now() - startAt;
    const serverCpuPercent = ((processCpuMs(pid) - cpuStart) / wallMs) * 100;
    const clientCpu = process.cpuUsage(clientCpuStart);
    const clientCpuPercent = ((clientCpu.user + clientCpu.system) / 1000 / wallMs) * 100;
    const runQueueWaitPercent = ((runQueueWaitMs(pid) - waitStart) / wallMs) * 100;
    const busiestThreadsPercent = [...threadCpuMs(pid)].map(([tid, cpuMs]) => ((cpuMs - (threadsStart.get(tid) ?? 0)) / wallMs) * 100)
      .sort((a, b) => b - a).slice(0, 3);
    clientLoop.disable();
    const peakRssKiB = peak.stop();
    const serverLoop = await serverLoopDelayMs();
    return {
      sessions,
      partialMs: results.flatMap((r) => r.partialMs),
      segmentEndMs: results.flatMap((r) => r.segmentEndMs),
      finalMs: results.flatMap((r) => r.finalMs),
      maxSendLagMs: Math.max(...results.map((r) => r.maxSendLagMs)),
      utterances: results.reduce((n, r) => n + r.utterances, 0),
      ambiguous: results.reduce((n, r) => n + r.ambiguous, 0),
      errors: results.flatMap((r) => r.errors),
      serverLoopP99Ms: serverLoop.p99,
      serverLoopMaxMs: serverLoop.max,
      clientLoopP99Ms: clientLoop.percentile(99) / 1e6,
      clientCpuPercent,
      serverCpuPercent,
      busiestThreadsPercent,
      runQueueWaitPercent,
      idleRssKiB,
      peakRssKiB,
      loadBefore,
      loadAfter: loadAverage(),
    };
  } finally {
    await stopServer(proc);
  }
}

function sustained(r: StepResult): boolean {
  return r.errors.length === 0 && r.maxSendLagMs <= CHUNK_MS && percentile(r.partialMs, 0.99) <= latencyBoundMs;
}

const results: StepResult[] = [];
for (const sessions of steps) {
  const r = await runStep(sessions);
  results.push(r);
  process.stderr.write(`${sessions} sessions: partial p99 ${percentile(r.partialMs, 0.99).toFixed(0)} ms, max send lag ${r.maxSendLagMs.toFixed(0)} ms, `
    + `server CPU ${r.serverCpuPercent.toFixed(0)}%, run-queue wait ${r.runQueueWaitPercent.toFixed(0)}%, ${r.errors.length} errors, load ${r.loadBefore} → ${r.loadAfter}\n`);
  for (const error of new Set(r.errors)) process.stderr.write(`  ${r.errors.filter((e) => e === error).length}× ${error}\n`);
}

const ms = (v: number): string => (Number.isNaN(v) ? '–' : v.toFixed(0));
const command = `${Object.entries({ SESSION_STEPS: process.env.SESSION_STEPS, SESSIONS: process.env.SESSIONS, DURATION_S: process.env.DURATION_S, MODE: process.env.MODE, LATENCY_BOUND_MS: process.env.LATENCY_BOUND_MS })
  .filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${v} `).join('')}npm run bench:streaming`;
console.log(`\`${command}\``);
console.log(`Mode ${mode}, ${durationS} s of real-time audio per session (speech.wav looped as utterances of one connection, 60 ms frames, 600 ms chunks), a fresh server per step.`);
console.log(`${cpus().length} CPUs (${cpus()[0].model}), Node ${process.version}; client and server share the machine.\n`);
console.log('| sessions | partial p50 / p99 / max ms | segment-end p50 / p99 ms | final p99 ms | max send lag ms | server loop delay p99 / max ms | client loop delay p99 ms | client CPU % | server CPU % (busiest threads) | server run-queue wait % | RSS idle → peak MiB | KiB / session | errors | sustained |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(`| ${r.sessions} | ${ms(percentile(r.partialMs, 0.5))} / ${ms(percentile(r.partialMs, 0.99))} / ${ms(Math.max(...r.partialMs))} `
    + `| ${ms(percentile(r.segmentEndMs, 0.5))} / ${ms(percentile(r.segmentEndMs, 0.99))} | ${ms(percentile(r.finalMs, 0.99))} | ${ms(r.maxSendLagMs)} `
    + `| ${ms(r.serverLoopP99Ms)} / ${ms(r.serverLoopMaxMs)} | ${ms(r.clientLoopP99Ms)} | ${r.clientCpuPercent.toFixed(0)} | ${r.serverCpuPercent.toFixed(0)} (${r.busiestThreadsPercent.map((p) => p.toFixed(0)).join(' / ')}) | ${r.runQueueWaitPercent.toFixed(0)} `
    + `| ${(r.idleRssKiB / 1024).toFixed(0)} → ${(r.peakRssKiB / 1024).toFixed(0)} | ${((r.peakRssKiB - r.idleRssKiB) / r.sessions).toFixed(0)} | ${r.errors.length} | ${sustained(r) ? 'yes' : 'no'} |`);
}
console.log('');
for (const r of results) {
  console.log(`${r.sessions} sessions: ${r.partialMs.length} partials, ${r.segmentEndMs.length} segment results, ${r.utterances} utterances; `
    + `${r.ambiguous} replies end within 5 ms of a frame boundary (their frame may be off by one); load average ${r.loadBefore} before, ${r.loadAfter} after.`);
}
console.log(`\nPartial latency: reply arrival − send time of the frame holding the last sample of its 600 ms chunk. Segment-end latency: the same for the segment's last sample `
  + `(2pass-offline reply; in online mode the closing chunk), including the VAD's 500 ms end-of-speech wait. Final: {"is_speaking": false} sent → is_final reply.`);
console.log(`Sustained: no errors or early closes, every utterance answered, no frame sent over ${CHUNK_MS} ms late, p99 partial ≤ ${latencyBoundMs} ms.`);
