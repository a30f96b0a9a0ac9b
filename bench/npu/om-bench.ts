/**
 * The OM route's per-call cost (JS -> AsyncWorker -> simulated aclmdlExecuteAsync -> JS), set
 * against the simulated execute's own time measured inside the library (execute_ns / executes).
 */
import { randomFill } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { NpuBackend } from '../../src/backends/npu/npu-backend.js';
import type { SimBuild } from '../../test/native/build-sim.js';
import { writeSimModel } from '../../test/native/sim/om-writer.js';
import { OVERHEAD_HEADER, ROUNDS, WARMUP, measure, overheadRow } from './measure.js';

export async function omOverhead(binding: NpuNativeBinding, sim: SimBuild, dir: string, calls: number): Promise<string> {
  const counters = createRequire(import.meta.url)(sim.countersAddon) as { counter(file: string, name: string): number };
  const simClock = () => ({ executes: counters.counter(sim.fullLibrary, 'executes'), ns: counters.counter(sim.fullLibrary, 'execute_ns') });
  const file = writeSimModel(join(dir, 'add.om'), {
    op: 'add',
    inputs: [{ name: 'a', datatype: 'FP32', dims: [1, 4] }, { name: 'b', datatype: 'FP32', dims: [1, 4] }],
    outputs: [{ name: 'sum', datatype: 'FP32', dims: [1, 4] }],
  });
  const a = new Float32Array([1, 2, 3, 4]);
  const b = new Float32Array([4, 3, 2, 1]);
  const model = await binding.loadModel({ libraryPath: sim.fullDir, deviceId: 0, file });
  const session = await new NpuBackend({ libraryPath: sim.fullDir, binding }).load(file);
  const tensor = (name: string, data: Float32Array) => ({ name, datatype: 'FP32', shape: [1, 4], data }) as const;
  const fill = promisify(randomFill);
  try {
    const rows = await measure(
      [
        { name: 'addon: OmModel.execute', call: () => model.execute([a, b], 1), simClock },
        { name: 'backend: NpuSession.run', call: () => session.run({ a: tensor('a', a), b: tensor('b', b) }), simClock },
        // The floor of any off-thread call here: one trip through Node's own libuv pool.
        { name: 'baseline: crypto.randomFill(16 B)', call: () => fill(new Uint8Array(16)) },
      ],
      calls,
    );
    return [
      `OM route: tiny add model [1,4] FP32, 0 ms simulated delay, ${WARMUP} warm-up calls per path, sequential awaits, paths interleaved in ${ROUNDS} rounds; sim execute = execute_ns / executes inside the simulated AscendCL.\n`,
      OVERHEAD_HEADER,
      ...rows.map(overheadRow),
    ].join('\n');
  } finally {
    await Promise.all([model.unload(), session.dispose()]);
  }
}
