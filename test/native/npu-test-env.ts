import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadNpuBinding, type NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { buildSimulatedAcl, type SimBuild } from './build-sim.js';
import { writeSimModel, type SimModelSpec } from './sim/om-writer.js';

/**
 * Shared set-up of the native tests. By default they run against the simulated AscendCL built
 * from test/native/sim. With SERVE_FN_NPU_REAL=1 they run against the real libascendcl (found
 * like production does, or at SERVE_FN_ACL_LIBRARY) and real .om files in SERVE_FN_NPU_MODELS,
 * and the assertions that read simulation counters are skipped (docs/npu.md).
 */
export const REAL_HARDWARE = process.env.SERVE_FN_NPU_REAL === '1';

/** Devices the multi-device tests spread instances over; set SERVE_FN_NPU_TEST_DEVICES=0 on a one-NPU machine. */
export const TEST_DEVICES = (process.env.SERVE_FN_NPU_TEST_DEVICES ?? '0,1').split(',').map(Number);

/** A device id no machine has (Atlas servers carry up to 16 NPUs). */
export const MISSING_DEVICE = 63;

/**
 * The small ONNX graph the ONNX routes are tested with (simulated runner, OM around ONNX, GE):
 * y = x · W + b, then Relu unless `relu` is false, x [batch, 3], W 3×2, b [2]: enough ops that a
 * wrong binding shows. With `doubled`, a second output z = x + x [batch, 3] of another shape.
 * The batch is symbolic unless a number is given.
 */
export function denseOnnxModel(options: { batch?: number | string; relu?: boolean; doubled?: boolean } = {}): Uint8Array {
  const { batch = 'batch', relu = true, doubled = false } = options;
  return buildOnnxModel({
    inputs: [{ name: 'x', datatype: 'FP32', shape: [batch, 3] }],
    outputs: [
      { name: 'y', datatype: 'FP32', shape: [batch, 2] },
      ...(doubled ? [{ name: 'z', datatype: 'FP32' as const, shape: [batch, 3] }] : []),
    ],
    initializers: [
      { name: 'W', datatype: 'FP32', shape: [3, 2], data: [0.5, -1.25, 2, 0.75, -0.3, 1.1] },
      { name: 'b', datatype: 'FP32', shape: [2], data: [0.1, -0.2] },
    ],
    nodes: [
      { op: 'MatMul', inputs: ['x', 'W'], outputs: ['xw'] },
      ...(relu
        ? [{ op: 'Add', inputs: ['xw', 'b'], outputs: ['pre'] }, { op: 'Relu', inputs: ['pre'], outputs: ['y'] }]
        : [{ op: 'Add', inputs: ['xw', 'b'], outputs: ['y'] }]),
      ...(doubled ? [{ op: 'Add', inputs: ['x', 'x'], outputs: ['z'] }] : []),
    ],
  });
}

/** The test models; docs/npu.md gives the ONNX + ATC recipe that builds the same ones for real. */
export const FIXTURES = {
  add_dyn: {
    op: 'add',
    batchGears: [1, 4, 8],
    inputs: [{ name: 'a', datatype: 'FP32', dims: [-1, 4] }, { name: 'b', datatype: 'FP32', dims: [-1, 4] }],
    outputs: [{ name: 'sum', datatype: 'FP32', dims: [-1, 4] }],
  },
  mul_static: {
    op: 'mul',
    inputs: [{ name: 'x', datatype: 'FP32', dims: [2, 3] }, { name: 'y', datatype: 'FP32', dims: [2, 3] }],
    outputs: [{ name: 'product', datatype: 'FP32', dims: [2, 3] }],
  },
  relu_static: {
    op: 'relu',
    inputs: [{ name: 'x', datatype: 'FP32', dims: [2, 4] }],
    outputs: [{ name: 'y', datatype: 'FP32', dims: [2, 4] }],
  },
  matmul_dyn: {
    op: 'matmul',
    batchGears: [1, 2, 4],
    inputs: [{ name: 'x', datatype: 'FP32', dims: [-1, 3] }],
    outputs: [{ name: 'y', datatype: 'FP32', dims: [-1, 2] }],
    weights: [1, 2, 3, 4, 5, 6],
  },
  add_int32: {
    op: 'add',
    inputs: [{ name: 'a', datatype: 'INT32', dims: [4] }, { name: 'b', datatype: 'INT32', dims: [4] }],
    outputs: [{ name: 'sum', datatype: 'INT32', dims: [4] }],
  },
} as const satisfies Record<string, SimModelSpec>;

export type FixtureName = keyof typeof FIXTURES;

interface SimCounters {
  counter(libraryFile: string, name: string): number;
  resetPeaks(libraryFile: string): void;
}

export interface NpuTestEnv {
  readonly binding: NpuNativeBinding;
  /** What to pass as libraryPath: the simulation's directory, or SERVE_FN_ACL_LIBRARY for real runs. */
  readonly libraryPath: string | undefined;
  readonly sim: SimBuild | undefined;
  /** A directory for a test's own files (removed by cleanup). */
  readonly scratchDir: string;
  modelFile(name: FixtureName): string;
  /** A simulation counter (README.md); throws on real hardware, where tests must skip instead. */
  counter(name: string): number;
  resetPeaks(): void;
  cleanup(): void;
}

function requireBinding(): NpuNativeBinding {
  const loaded = loadNpuBinding();
  if ('reason' in loaded) throw new Error(loaded.reason);
  return loaded.binding;
}

export function setUpNpuTests(): NpuTestEnv {
  const binding = requireBinding();
  const scratchDir = mkdtempSync(join(tmpdir(), 'serve-fn-npu-'));
  const sim = REAL_HARDWARE ? undefined : buildSimulatedAcl();
  const modelDir = REAL_HARDWARE ? process.env.SERVE_FN_NPU_MODELS : scratchDir;
  if (!modelDir) throw new Error('SERVE_FN_NPU_REAL=1 needs SERVE_FN_NPU_MODELS: a directory with the .om files of docs/npu.md');
  // Probing loads the simulation, so its counters can be read before the first model loads.
  if (sim && !binding.probeLibrary(sim.fullDir).found) throw new Error(`the simulation in ${sim.fullDir} did not load`);
  const counters = sim ? (createRequire(import.meta.url)(sim.countersAddon) as SimCounters) : undefined;
  const simOnly = (): [SimCounters, string] => {
    if (!counters || !sim) throw new Error('simulation counters are not available on real hardware');
    return [counters, sim.fullLibrary];
  };
  return {
    binding,
    libraryPath: sim ? sim.fullDir : process.env.SERVE_FN_ACL_LIBRARY,
    sim,
    scratchDir,
    modelFile(name) {
      const file = join(modelDir, `${name}.om`);
      if (sim && !existsSync(file)) writeSimModel(file, FIXTURES[name]);
      return file;
    },
    counter(name) {
      const [reader, file] = simOnly();
      return reader.counter(file, name);
    },
    resetPeaks() {
      const [reader, file] = simOnly();
      reader.resetPeaks(file);
    },
    cleanup() {
      rmSync(scratchDir, { recursive: true, force: true });
    },
  };
}

/** Outstanding simulation resources that must all be zero once every model is unloaded. */
export const LEAK_COUNTERS = [
  'device_allocs', 'device_bytes', 'host_allocs', 'contexts', 'streams', 'devices_set',
  'models_loaded', 'model_descs', 'datasets', 'data_buffers',
] as const;

export function f32(...values: number[]): Float32Array {
  return new Float32Array(values);
}
