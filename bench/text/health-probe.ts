/** One `/health/live` probe: when it was sent (epoch ms) and how long its answer took (ms). */
export interface Probe {
  readonly sentMs: number;
  readonly ms: number;
}

export interface ProbeSummary {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly count: number;
}

/** GET /health/live every 20 ms for `seconds`, one at a time, over one keep-alive connection. */
export async function probeHealth(base: string, seconds: number): Promise<Probe[]> {
  const probes: Probe[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const sent = performance.now();
    await (await fetch(`${base}/health/live`)).arrayBuffer();
    probes.push({ sentMs: performance.timeOrigin + sent, ms: performance.now() - sent });
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return probes;
}

export function summarize(probes: readonly Probe[]): ProbeSummary {
  const sorted = probes.map((p) => p.ms).sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1)!, count: sorted.length };
}
