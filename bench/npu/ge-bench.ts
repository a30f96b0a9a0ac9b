/**
 * The GE route's costs on the simulated CANN (test/native/sim-ge):
 * - per call: one execute through the addon (GeModel.execute) and through the whole TypeScript
 *   session (GeSession.run), set against the simulated execute itself. The simulated GE libraries
 *   keep no execute clock, but both simulations run a graph with the same ONNX runner
 *   (sim_onnx_run); the simulated AscendCL times it inside the library (execute_ns), so the same
 *   ONNX graph in an OM (op onnx), executed through the OM route, gives that time;
 * - the JS-thread part of the addon calls: the time until GeModel.execute / OmModel.execute return
 *   their promise (argument reading and queuing), which is all the JS thread pays per call;
 * - the batch split: a 16-row batch over 1, 2 and 4 execution slots with a simulated per-execute delay.
 */
import { randomFill } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { GeBackend } from '../../src/backends/npu/ge-backend.js';
import type { NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import type { Tensor } from '../../src/spec/tensor.js';
import { writeSimModel } from '../../test/native/sim/om-writer.js';
import { OVERHEAD_HEADER, ROUNDS, WARMUP, measure, overheadRow, percentile, tableLine } from './measure.js';

/** What the bench needs of the simulated CANN (test/native/build-sim-ge.ts) and the test addons. */
export interface GeBenchSim {
  /** The simulated CANN home's AscendCL, which its GE libraries use too. */
  readonly aclLibrary: string;
  readonly geRunnerLibrary: string;
  readonly countersAddon: string;
  /** The simulated AscendCL of the OM comparison, and the directory holding it. */
  readonly omLibrary: string;
  readonly omLibraryDir: string;
}

interface SimCounters {
  counter(file: string, name: string): number;
  resetPeaks(file: string): void;
}

const FP32 = 0; // ge::DataType DT_FLOAT
const SPLIT_ROWS = 16;
const SPLIT_DELAY_MS = 20;
const SPLIT_BATCHES = 25;
const SPLIT_SLOTS = [1, 2, 4];
const SPLIT_GEARS = [1, 2, 4];

const addModel = () =>
  buildOnnxModel({
    inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 4] }, { name: 'b', datatype: 'FP32', shape: [1, 4] }],
    outputs: [{ name: 'sum', datatype: 'FP32', shape: [1, 4] }],
    nodes: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['sum'] }],
  });

const reluModel = () =>
  buildOnnxModel({
    inputs: [{ name: 'x', datatype: 'FP32', shape: ['n', 4] }],
    outputs: [{ name: 'y', datatype: 'FP32', shape: ['n', 4] }],
    nodes: [{ op: 'Relu', inputs: ['x'], outputs: ['y'] }],
  });

const tensor = (name: string, shape: number[], data: Float32Array): Tensor => ({ name, datatype: 'FP32', shape, data });

const SYNC_CALLS = 20_000;

/** Mean µs until each call has returned its promise, the paths interleaved in rounds like measure(). */
async function jsThreadPart(paths: readonly { name: string; call: () => Promise<unknown> }[]): Promise<string> {
  const totals = paths.map(() => 0n);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [p, path] of paths.entries()) {
      for (let i = 0; i < SYNC_CALLS / ROUNDS; i++) {
        const start = process.hrtime.bigint();
        const settled = path.call();
        totals[p]! += process.hrtime.bigint() - start;
        await settled;
      }
    }
  }
  return [
    `JS-thread part per call (until the promise is returned), ${SYNC_CALLS} calls per path in ${ROUNDS} rounds:\n`,
    '| path | mean µs on the JS thread |',
    '|---|---|',
    ...paths.map((path, p) => tableLine([path.name, Number(totals[p]!) / SYNC_CALLS / 1000])),
  ].join('\n');
}

export async function geOverhead(binding: NpuNativeBinding, sim: GeBenchSim, dir: string, calls: number): Promise<string> {
  delete process.env.GE_SIM_EXECUTE_DELAY_MS;
  const counters = createRequire(import.meta.url)(sim.countersAddon) as SimCounters;
  const simClock = () => ({ executes: counters.counter(sim.omLibrary, 'executes'), ns: counters.counter(sim.omLibrary, 'execute_ns') });
  const onnx = addModel();
  const om = await binding.loadModel({ libraryPath: sim.omLibraryDir, deviceId: 0, file: writeSimModel(join(dir, 'add-onnx.om'), { op: 'onnx', onnx }) });
  const a = new Float32Array([1, 2, 3, 4]);
  const b = new Float32Array([4, 3, 2, 1]);
  const model = await binding.loadGeModel!({
    libraryPath: sim.aclLibrary,
    deviceId: 0,
    bytes: onnx,
    slots: 1,
    globalOptions: {},
    sessionOptions: { 'ge.exec.precision_mode_v2': 'origin' },
    graphOptions: {},
    parserOptions: {},
  });
  const session = await new GeBackend({ libraryPath: sim.aclLibrary, binding }).load(onnx, { device: { kind: 'npu', id: 0 } });
  const fill = promisify(randomFill);
  const inputs = [{ data: a, dims: [1, 4], dataType: FP32 }, { data: b, dims: [1, 4], dataType: FP32 }];
  try {
    const rows = await measure(
      [
        { name: 'addon: GeModel.execute', call: () => model.execute(0, inputs, [{ dataType: FP32, dims: [1, 4] }]) },
        { name: 'backend: GeSession.run', call: () => session.run({ a: tensor('a', [1, 4], a), b: tensor('b', [1, 4], b) }) },
        // The same graph and tensors through the OM route, whose simulation clocks its execute.
        { name: 'addon: OmModel.execute, same graph (OM op onnx)', call: () => om.execute([a, b], 1), simClock },
        { name: 'baseline: crypto.randomFill(16 B)', call: () => fill(new Uint8Array(16)) },
      ],
      calls,
    );
    const simUs = rows[2]!.simUs;
    const table = rows.map((row, i) => overheadRow(i < 2 ? { ...row, simUs } : row));
    const jsThread = await jsThreadPart([
      { name: 'addon: GeModel.execute', call: () => model.execute(0, inputs, [{ dataType: FP32, dims: [1, 4] }]) },
      { name: 'addon: OmModel.execute, same graph (OM op onnx)', call: () => om.execute([a, b], 1) },
    ]);
    return [
      `GE route: tiny add model [1,4] FP32 (ONNX), 1 slot, GE_SIM_EXECUTE_DELAY_MS=0, ${WARMUP} warm-up calls per path, sequential awaits, paths interleaved in ${ROUNDS} rounds; ` +
        'sim execute = execute_ns / executes of the same ONNX graph run by the simulated AscendCL (the OM op onnx row), the runner the simulated GE execute calls too.\n',
      OVERHEAD_HEADER,
      ...table,
      '',
      jsThread,
    ].join('\n');
  } finally {
    await Promise.all([model.unload(), session.dispose(), om.unload()]);
  }
}

export async function geSlotSplit(binding: NpuNativeBinding, sim: GeBenchSim): Promise<string> {
  const counters = createRequire(import.meta.url)(sim.countersAddon) as SimCounters;
  const counter = (name: string) => counters.counter(sim.geRunnerLibrary, name);
  const onnx = reluModel();
  const x = Float32Array.from({ length: SPLIT_ROWS * 4 }, (_, i) => i - 30);
  const lines = [
    `GE route: relu [n,4] FP32 (ONNX), gears ${SPLIT_GEARS.join('/')} (graph.ge.inputShape x:-1,4, graph.ge.dynamicDims), GE_SIM_EXECUTE_DELAY_MS=${SPLIT_DELAY_MS}, ` +
      `${SPLIT_BATCHES} sequential ${SPLIT_ROWS}-row batches per slot count after 2 warm-up batches.\n`,
    '| slots | executes per batch | max concurrent executes | mean ms/batch | p50 ms | rows/s |',
    '|---|---|---|---|---|---|',
  ];
  process.env.GE_SIM_EXECUTE_DELAY_MS = String(SPLIT_DELAY_MS);
  try {
    for (const slots of SPLIT_SLOTS) {
      const session = await new GeBackend({ libraryPath: sim.aclLibrary, binding }).load(onnx, {
        device: { kind: 'npu', id: 0 },
        options: { slots, 'graph.ge.inputShape': 'x:-1,4', 'graph.ge.dynamicDims': SPLIT_GEARS.join(';') },
      });
      try {
        const batch = { x: tensor('x', [SPLIT_ROWS, 4], x) };
        for (let i = 0; i < 2; i++) await session.run(batch);
        counters.resetPeaks(sim.geRunnerLibrary);
        const executesBefore = counter('executes');
        const latencies: number[] = [];
        const started = process.hrtime.bigint();
        for (let i = 0; i < SPLIT_BATCHES; i++) {
          const start = process.hrtime.bigint();
          await session.run(batch);
          latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
        }
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const sorted = [...latencies].sort((p, q) => p - q);
        const mean = latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length;
        const executes = (counter('executes') - executesBefore) / SPLIT_BATCHES;
        lines.push(tableLine([slots, executes, counter('max_concurrent_executes'), mean, percentile(sorted, 50), Math.round((SPLIT_ROWS * SPLIT_BATCHES) / seconds)]));
      } finally {
        await session.dispose();
      }
    }
  } finally {
    delete process.env.GE_SIM_EXECUTE_DELAY_MS;
  }
  return lines.join('\n');
}
