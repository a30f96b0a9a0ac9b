import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver, constants } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

/**
 * Preloaded into the server under test by probe-causes.ts (`node --import <this> bin/serve-fn.js
 * start ...`): what delays the HTTP thread from the inside. The event loop's delay (Node's
 * `monitorEventLoopDelay`, sampled every millisecond) and every GC pause of the HTTP thread's isolate
 * (a `PerformanceObserver` on 'gc'), kept per window: SIGUSR2 writes the window so far to
 * $LOOP_MONITOR_OUT as JSON and starts the next. Workers inherit the preload; only the main thread
 * (the HTTP thread) is watched.
 */
export interface LoopWindow {
  /** Epoch ms of the window's ends. */
  readonly fromMs: number;
  readonly toMs: number;
  /** Event-loop delay, ms (beyond the 1 ms sampling interval). */
  readonly delay: { readonly p50: number; readonly p99: number; readonly max: number; readonly mean: number; readonly samples: number };
  /** GC pauses of the HTTP thread: epoch start ms, duration ms, kind. */
  readonly gc: readonly { readonly startMs: number; readonly ms: number; readonly kind: string }[];
}

const KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

if (isMainThread && process.env.LOOP_MONITOR_OUT) {
  const out = process.env.LOOP_MONITOR_OUT;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let gc: { startMs: number; ms: number; kind: string }[] = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = KINDS[(entry as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      gc.push({ startMs: performance.timeOrigin + entry.startTime, ms: entry.duration, kind });
    }
  }).observe({ entryTypes: ['gc'] });
  let fromMs = performance.timeOrigin + performance.now();
  process.on('SIGUSR2', () => {
    const toMs = performance.timeOrigin + performance.now();
    const ms = (ns: number): number => ns / 1e6;
    const window: LoopWindow = {
      fromMs, toMs, gc,
      delay: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max), mean: ms(delay.mean), samples: delay.count },
    };
    writeFileSync(out, JSON.stringify(window));
    delay.reset();
    gc = [];
    fromMs = toMs;
  });
}
