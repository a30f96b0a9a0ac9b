/**
 * Timing shared by the NPU benchmarks (run.ts): sequential awaited calls per path, the paths
 * interleaved in rounds, and the markdown rows of bench/npu/RESULTS.md.
 */

export const WARMUP = 500;
export const ROUNDS = 5;
export const TARGET_US = 30;

export interface Path {
  readonly name: string;
  readonly call: () => Promise<unknown>;
  /** Cumulative in-library execute count and nanoseconds, for a path that runs the simulated model. */
  readonly simClock?: () => { readonly executes: number; readonly ns: number };
}

export interface Row {
  readonly path: string;
  readonly callsUs: number[];
  /** The simulated execute's own time per call; undefined for a baseline. */
  readonly simUs: number | undefined;
}

/** Interleaves the paths in rounds, so a busy moment on a shared machine hits them all alike. */
export async function measure(paths: readonly Path[], calls: number): Promise<Row[]> {
  const samples = paths.map(() => ({ callsUs: [] as number[], executes: 0, ns: 0 }));
  for (const path of paths) for (let i = 0; i < WARMUP; i++) await path.call();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [p, path] of paths.entries()) {
      const before = path.simClock?.();
      for (let i = 0; i < calls / ROUNDS; i++) {
        const start = process.hrtime.bigint();
        await path.call();
        samples[p]!.callsUs.push(Number(process.hrtime.bigint() - start) / 1000);
      }
      const after = path.simClock?.();
      if (before && after) {
        samples[p]!.executes += after.executes - before.executes;
        samples[p]!.ns += after.ns - before.ns;
      }
    }
  }
  return paths.map((path, p) => ({
    path: path.name,
    callsUs: samples[p]!.callsUs,
    simUs: path.simClock ? samples[p]!.ns / samples[p]!.executes / 1000 : undefined,
  }));
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function cellText(cell: string | number): string {
  return typeof cell === 'number' && !Number.isInteger(cell) ? cell.toFixed(1) : String(cell);
}

export const OVERHEAD_HEADER = [
  `| path | calls | mean µs/call | p50 µs | p99 µs | sim execute µs | overhead µs (mean − sim) | overhead µs (p50 − sim) | ≤ ${TARGET_US} µs (mean / p50) |`,
  '|---|---|---|---|---|---|---|---|---|',
].join('\n');

export function overheadRow({ path, callsUs, simUs }: Row): string {
  const sorted = [...callsUs].sort((a, b) => a - b);
  const mean = callsUs.reduce((sum, us) => sum + us, 0) / callsUs.length;
  const p50 = percentile(sorted, 50);
  const overheads = [mean - (simUs ?? 0), p50 - (simUs ?? 0)];
  const cells = [path, callsUs.length, mean, p50, percentile(sorted, 99), simUs ?? '—', ...overheads];
  const verdict = simUs === undefined ? '—' : overheads.map((us) => (us <= TARGET_US ? 'yes' : 'no')).join(' / ');
  return `| ${cells.map(cellText).join(' | ')} | ${verdict} |`;
}

export function tableLine(cells: readonly (string | number)[]): string {
  return `| ${cells.map(cellText).join(' | ')} |`;
}
