/**
 * Per-call cost of the NPU addon path (JS -> AsyncWorker -> simulated execute -> JS), set against
 * the simulated aclmdlExecuteAsync's own time measured inside the library, in one run.
 *
 *   node --import ./loader/register.mjs bench/npu/run.ts [calls]
 *
 * Needs the addon (`npm run build:native`); builds the simulation itself. Prints a markdown table.
 */
import { randomFill } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadNpuBinding, type NativeOmModel } from '../../src/backends/npu/native-binding.js';
import { NpuBackend } from '../../src/backends/npu/npu-backend.js';
import { buildSimulatedAcl } from '../../test/native/build-sim.js';
import { writeSimModel } from '../../test/native/sim/om-writer.js';

const CALLS = Number(process.argv[2] ?? 5000);
const WARMUP = 500;
const TARGET_US = 30;

const ROUNDS = 5;

interface Path {
  readonly name: string;
  readonly call: () => Promise<unknown>;
  /** Whether the call runs the simulated model (the baseline runs none). */
  readonly runsModel: boolean;
}

interface Row {
  readonly path: string;
  readonly callsUs: number[];
  /** In-library execute time per call; undefined for the baseline. */
  readonly simUs: number | undefined;
}

/** Interleaves the paths in rounds, so a busy moment on a shared machine hits them all alike. */
async function measure(paths: readonly Path[], counter: (name: string) => number): Promise<Row[]> {
  const samples = paths.map(() => ({ callsUs: [] as number[], executes: 0, executeNs: 0 }));
  for (const path of paths) for (let i = 0; i < WARMUP; i++) await path.call();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [p, path] of paths.entries()) {
      const [executes, executeNs] = [counter('executes'), counter('execute_ns')];
      for (let i = 0; i < CALLS / ROUNDS; i++) {
        const start = process.hrtime.bigint();
        await path.call();
        samples[p]!.callsUs.push(Number(process.hrtime.bigint() - start) / 1000);
      }
      samples[p]!.executes += counter('executes') - executes;
      samples[p]!.executeNs += counter('execute_ns') - executeNs;
    }
  }
  return paths.map((path, p) => ({
    path: path.name,
    callsUs: samples[p]!.callsUs,
    simUs: path.runsModel ? samples[p]!.executeNs / samples[p]!.executes / 1000 : undefined,
  }));
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function tableRow({ path, callsUs, simUs }: Row): string {
  const sorted = [...callsUs].sort((a, b) => a - b);
  const mean = callsUs.reduce((sum, us) => sum + us, 0) / callsUs.length;
  const p50 = percentile(sorted, 50);
  const overheads = [mean - (simUs ?? 0), p50 - (simUs ?? 0)];
  const cells = [path, CALLS, mean, p50, percentile(sorted, 99), simUs ?? '—', ...overheads];
  const text = cells.map((cell) => (typeof cell === 'number' && !Number.isInteger(cell) ? cell.toFixed(1) : String(cell)));
  const verdict = simUs === undefined ? '—' : overheads.map((us) => (us <= TARGET_US ? 'yes' : 'no')).join(' / ');
  return `| ${text.join(' | ')} | ${verdict} |`;
}

async function main(): Promise<void> {
  delete process.env.ACL_SIM_EXECUTE_DELAY_MS;
  const sim = buildSimulatedAcl();
  const loaded = loadNpuBinding();
  if ('reason' in loaded) throw new Error(loaded.reason);
  const counters = createRequire(import.meta.url)(sim.countersAddon) as { counter(file: string, name: string): number };
  const counter = (name: string) => counters.counter(sim.fullLibrary, name);
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-npu-bench-'));
  const file = writeSimModel(join(dir, 'add.om'), {
    op: 'add',
    inputs: [{ name: 'a', datatype: 'FP32', dims: [1, 4] }, { name: 'b', datatype: 'FP32', dims: [1, 4] }],
    outputs: [{ name: 'sum', datatype: 'FP32', dims: [1, 4] }],
  });
  const a = new Float32Array([1, 2, 3, 4]);
  const b = new Float32Array([4, 3, 2, 1]);
  try {
    const model: NativeOmModel = await loaded.binding.loadModel({ libraryPath: sim.fullDir, deviceId: 0, file });
    const session = await new NpuBackend({ libraryPath: sim.fullDir }).load(file);
    const tensor = (name: string, data: Float32Array) => ({ name, datatype: 'FP32', shape: [1, 4], data }) as const;
    const fill = promisify(randomFill);
    const rows = await measure(
      [
        { name: 'addon: OmModel.execute', call: () => model.execute([a, b], 1), runsModel: true },
        { name: 'backend: NpuSession.run', call: () => session.run({ a: tensor('a', a), b: tensor('b', b) }), runsModel: true },
        // The floor of any off-thread call here: one trip through Node's own libuv pool.
        { name: 'baseline: crypto.randomFill(16 B)', call: () => fill(new Uint8Array(16)), runsModel: false },
      ],
      counter,
    );
    await Promise.all([model.unload(), session.dispose()]);
    const load = loadavg()[0]!.toFixed(1);
    console.log(`Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${load}; tiny add model [1,4] FP32, 0 ms simulated delay, ${WARMUP} warm-up calls per path, sequential awaits, paths interleaved in ${ROUNDS} rounds.\n`);
    console.log(
      `| path | calls | mean µs/call | p50 µs | p99 µs | sim execute µs (in library) | overhead µs (mean − sim) | overhead µs (p50 − sim) | ≤ ${TARGET_US} µs (mean / p50) |`,
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(tableRow(row));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
