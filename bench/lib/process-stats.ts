import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The unit of CPU times in /proc/stat and /proc/<pid>/stat (USER_HZ). */
export const clockTicksPerS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** Resident memory of another process, all threads, in KiB (Linux /proc). */
export function processRssKiB(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!line) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(line[1]);
}

/** User + system CPU time from a /proc stat file, in ms. */
function statCpuMs(path: string): number {
  const fields = readFileSync(path, 'utf8').replace(/^.*\) /, '').split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerS;
}

/** User + system CPU time of another process, all threads, in ms (Linux /proc). */
export function processCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time of each thread of another process, in ms by thread id. Node names every thread of a
 * process "node", worker threads included, so threads are told apart by id only.
 */
export function threadCpuMs(pid: number): Map<number, number> {
  return new Map(readdirSync(`/proc/${pid}/task`).map((tid) => [Number(tid), statCpuMs(`/proc/${pid}/task/${tid}/stat`)]));
}

/**
 * Time the threads of another process spent runnable but waiting for a CPU, summed over threads,
 * in ms (/proc schedstat). On a shared machine this tells "the server was slow" from "the server
 * was not given the CPU".
 */
export function runQueueWaitMs(pid: number): number {
  return readdirSync(`/proc/${pid}/task`)
    .map((tid) => Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]) / 1e6)
    .reduce((sum, ms) => sum + ms, 0);
}

/** The three load averages as `uptime` prints them. */
export function loadAverage(): string {
  return execFileSync('uptime', { encoding: 'utf8' }).trim().replace(/.*load average: /, '');
}

/** Samples a process's RSS every `everyMs` and keeps the highest, until stopped. */
export class PeakRss {
  #peak: number;
  readonly #timer: NodeJS.Timeout;

  constructor(private readonly pid: number, everyMs: number) {
    this.#peak = processRssKiB(pid);
    this.#timer = setInterval(() => (this.#peak = Math.max(this.#peak, processRssKiB(pid))), everyMs);
  }

  stop(): number {
    clearInterval(this.#timer);
    return Math.max(this.#peak, processRssKiB(this.pid));
  }
}
