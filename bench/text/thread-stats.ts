import { readdirSync, readFileSync } from 'node:fs';
import { clockTicksPerS } from '../lib/process-stats.js';

/** One thread of a process from /proc: name, niceness, CPU ms, ms runnable but not running, times it was put on a core. */
export interface ThreadSample {
  readonly name: string;
  readonly nice: number;
  readonly cpuMs: number;
  readonly waitMs: number;
  readonly slices: number;
}

export function threads(pid: number): Map<number, ThreadSample> {
  const sampled = new Map<number, ThreadSample>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const [, waitNs, slices] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
      sampled.set(Number(tid), { name, nice: Number(fields[16]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerS, waitMs: waitNs! / 1e6, slices: slices! });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return sampled;
}

/**
 * Where a server's CPU went between two samples, ms: its HTTP thread (tid = pid), the threads at a
 * positive niceness (the instances and ONNX Runtime's pools under `serve-fn start`), and the rest
 * (libuv's pool, which runs the tokenizer; V8's GC and compiler helpers).
 */
export function cpuSplit(pid: number, before: Map<number, ThreadSample>, after: Map<number, ThreadSample>): { http: number; instances: number; others: number } {
  const split = { http: 0, instances: 0, others: 0 };
  for (const [tid, a] of after) {
    const ms = a.cpuMs - (before.get(tid)?.cpuMs ?? 0);
    if (tid === pid) split.http += ms;
    else if (a.nice > 0) split.instances += ms;
    else split.others += ms;
  }
  return split;
}
