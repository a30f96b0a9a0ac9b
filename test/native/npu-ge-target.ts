import { createRequire } from 'node:module';
import { geMissingReason, loadNpuBinding, type NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { ACL_LIBRARY_ENV } from '../../src/backends/npu/npu-library.js';
import { buildGeAddon } from './build-ge-addon.js';
import { buildSimulatedAcl, onnxRuntimeLibrary } from './build-sim.js';
import { REAL_HARDWARE } from './npu-test-env.js';

/**
 * What the npu_ge integration tests (npu-ge-backend.test.ts, npu-ge-served.test.ts) run against.
 * By default the GE addon built against the simulated CANN home of test/native/sim-ge, whose
 * counters the tests read. With SERVE_FN_NPU_REAL=1 (bench/npu/run-on-atlas.sh) a real CANN
 * install: the addon from SERVE_FN_NPU_ADDON or native/build, found as production finds it, and
 * AscendCL from SERVE_FN_ACL_LIBRARY (else the search of docs/npu.md); there are no counters and no
 * injected failures, so the tests skip those checks. This helper has only run on the simulation.
 */
export interface GeTarget {
  readonly binding: NpuNativeBinding;
  /** What to pass as libraryPath; undefined on real CANN without SERVE_FN_ACL_LIBRARY. */
  readonly aclLibrary: string | undefined;
  /** The environment the target needs while the tests run (restored by restore()). */
  restore(): void;
  /** A counter of the simulated GE runner or AscendCL (their README.md); only in the simulation. */
  ge(name: string): number;
  acl(name: string): number;
}

interface SimCounters {
  counter(libraryFile: string, name: string): number;
}

export { REAL_HARDWARE };

/** Sets `vars` in process.env and returns what puts the previous values back. */
export function setEnv(vars: Readonly<Record<string, string>>): () => void {
  const saved = Object.keys(vars).map((key) => [key, process.env[key]] as const);
  Object.assign(process.env, vars);
  return () => {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}

export async function setUpGeTarget(): Promise<GeTarget> {
  const sim = REAL_HARDWARE ? undefined : await buildGeAddon();
  const restore = setEnv(
    sim ? { SERVE_FN_NPU_ADDON: sim.addon, [ACL_LIBRARY_ENV]: sim.cann.aclLibrary, SIM_ORT_LIBRARY: onnxRuntimeLibrary() } : {},
  );
  // The GE addon links the (simulated) GE libraries, so loading it makes their counters readable.
  const loaded = loadNpuBinding();
  if ('reason' in loaded) throw new Error(loaded.reason);
  if (!loaded.binding.loadGeModel) throw new Error(geMissingReason(loaded));
  const counters = sim ? (createRequire(import.meta.url)(buildSimulatedAcl().countersAddon) as SimCounters) : undefined;
  const count = (library: 'geRunnerLibrary' | 'aclLibrary') => (name: string) => {
    if (!sim || !counters) throw new Error(`the simulation's counter ${name} does not exist on real CANN; skip the check there`);
    return counters.counter(sim.cann[library], name);
  };
  return {
    binding: loaded.binding,
    aclLibrary: sim ? sim.cann.aclLibrary : process.env[ACL_LIBRARY_ENV] || undefined,
    restore,
    ge: count('geRunnerLibrary'),
    acl: count('aclLibrary'),
  };
}
