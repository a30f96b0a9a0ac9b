/**
 * Per-call cost of the NPU addon's two routes on the simulated CANN, and the GE route's batch split
 * over execution slots, in one run (bench/npu/RESULTS.md):
 * - OM: JS -> AsyncWorker -> simulated aclmdlExecuteAsync -> JS, against the simulated execute's
 *   own time measured inside the library (om-bench.ts);
 * - GE: one ExecuteGraphWithStreamAsync through the addon and through GeSession, against the
 *   simulated execute itself, and a 16-row batch over 1/2/4 slots (ge-bench.ts).
 *
 *   node --import ./loader/register.mjs bench/npu/run.ts [calls]
 *
 * Builds the simulated AscendCL, the simulated GE libraries and the GE build of the addon against
 * them itself (g++ and node-gyp; no CANN). Prints markdown tables.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadNpuBinding } from '../../src/backends/npu/native-binding.js';
import { buildGeAddon } from '../../test/native/build-ge-addon.js';
import { buildSimulatedAcl } from '../../test/native/build-sim.js';
import { geOverhead, geSlotSplit } from './ge-bench.js';
import { omOverhead } from './om-bench.js';

const CALLS = Number(process.argv[2] ?? 5000);

async function main(): Promise<void> {
  delete process.env.ACL_SIM_EXECUTE_DELAY_MS;
  const sim = buildSimulatedAcl();
  const { addon, cann } = await buildGeAddon();
  // The GE build is a superset of the plain addon, so both routes run through the one loaded here.
  process.env.SERVE_FN_NPU_ADDON = addon;
  const loaded = loadNpuBinding();
  if ('reason' in loaded) throw new Error(loaded.reason);
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-npu-bench-'));
  try {
    const geSim = { aclLibrary: cann.aclLibrary, geRunnerLibrary: cann.geRunnerLibrary, countersAddon: sim.countersAddon, omLibrary: sim.fullLibrary, omLibraryDir: sim.fullDir };
    const om = await omOverhead(loaded.binding, sim, dir, CALLS);
    const ge = await geOverhead(loaded.binding, geSim, dir, CALLS);
    const split = await geSlotSplit(loaded.binding, geSim);
    const load = loadavg()[0]!.toFixed(1);
    console.log(`Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, load average ${load} at the end of the run.\n`);
    console.log(`${om}\n\n${ge}\n\n${split}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
