import { readFileSync } from 'node:fs';
import { clockTicksPerS, processCpuMs } from '../lib/process-stats.js';

/**
 * How much of the machine went to other work while a measurement ran. This machine is shared, and a
 * ratio between two runs means little when other processes took half the cores during one of them,
 * so the bench prints this next to each round. Linux only: it reads /proc.
 */
export interface CpuShare {
  /** Percent of one core, averaged over the measurement, used by processes other than `pids` and this one. */
  readonly othersPct: number;
}

export function measureCpuShare(pids: readonly number[]): () => CpuShare {
  const startMachine = machineBusyS();
  const startOurs = oursS(pids);
  const startWall = performance.now();
  return () => {
    const wallS = (performance.now() - startWall) / 1000;
    const others = machineBusyS() - startMachine - (oursS(pids) - startOurs);
    return { othersPct: Math.max(0, (others / wallS) * 100) };
  };
}

function machineBusyS(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, v) => sum + v, 0);
  return (total - fields[3]! - fields[4]!) / clockTicksPerS;
}

function oursS(pids: readonly number[]): number {
  const self = process.cpuUsage();
  return (self.user + self.system) / 1e6 + pids.reduce((sum, pid) => sum + processCpuMs(pid) / 1000, 0);
}
