import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import type { NativeGeLoadOptions, NativeGeTensor, NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { buildGeAddon, type GeAddonBuild } from './build-ge-addon.js';
import { buildSimulatedAcl } from './build-sim.js';
import { denseOnnxModel } from './npu-test-env.js';

/**
 * Shared set-up of the GE addon tests (ge-addon.test.ts, ge-convert.test.ts): the addon built
 * against the simulated CANN home, the simulation's counters, a test model and its references
 * from onnxruntime-node on the CPU. Simulation only: nothing here has run on Ascend hardware.
 */

export type GeBinding = Required<Pick<NpuNativeBinding, 'geInfo' | 'loadGeModel' | 'convertGeModel'>> & NpuNativeBinding;
export type GeError = Error & { geFunction?: string; geStatus?: number; geMessage?: string };

interface SimCounters {
  counter(libraryFile: string, name: string): number;
  resetPeaks(libraryFile: string): void;
}

export const FP32 = 0;
export const X_DIMS = [4, 3];

/**
 * y = Relu(x · W + b) [batch, 2] and z = x + x [batch, 3]: two outputs of different shapes, in
 * that order. The batch is 4, or symbolic when named.
 */
export function denseModel(batch: number | string = 4): Uint8Array {
  return denseOnnxModel({ batch, doubled: true });
}

/** `rows` rows of x whose results have positive and clipped values; the seed makes each call's differ. */
export function input(seed: number, rows = 4): Float32Array {
  return Float32Array.from({ length: rows * 3 }, (_, i) => ((i * 7 + seed * 3) % 11) / 4 - 1.3);
}

export async function reference(x: Float32Array): Promise<{ y: number[]; z: number[] }> {
  const session = await ort.InferenceSession.create(denseModel('batch'));
  const out = await session.run({ x: new ort.Tensor('float32', x, [x.length / 3, 3]) });
  return { y: Array.from(out.y!.data as Float32Array), z: Array.from(out.z!.data as Float32Array) };
}

/** Rounds float32 values to the nearest binary16 and back, by ONNX Runtime's own Cast. */
export async function throughHalf(values: Float32Array, dims: readonly number[]): Promise<Float32Array> {
  const roundTrip = buildOnnxModel({
    inputs: [{ name: 'v', datatype: 'FP32', shape: dims }],
    outputs: [{ name: 'r', datatype: 'FP32', shape: dims }],
    nodes: [
      { op: 'Cast', inputs: ['v'], outputs: ['h'], attributes: { to: { int: 10 } } },
      { op: 'Cast', inputs: ['h'], outputs: ['r'], attributes: { to: { int: 1 } } },
    ],
  });
  const session = await ort.InferenceSession.create(roundTrip);
  return (await session.run({ v: new ort.Tensor('float32', values, dims) })).r!.data as Float32Array;
}

/** What fp16 compute gives in the simulation: inputs and outputs rounded to binary16, float32 between. */
export async function halfReference(x: Float32Array): Promise<{ y: number[]; z: number[] }> {
  const exact = await reference(await throughHalf(x, X_DIMS));
  return {
    y: Array.from(await throughHalf(Float32Array.from(exact.y), [4, 2])),
    z: Array.from(await throughHalf(Float32Array.from(exact.z), X_DIMS)),
  };
}

export const tensor = (x: Float32Array): NativeGeTensor => ({ data: x, dims: X_DIMS, dataType: FP32 });
export const CALLER_OUTPUTS = [{ dataType: FP32, dims: [4, 2] }, { dataType: FP32, dims: X_DIMS }];
export const GE_OUTPUTS = [{ dataType: FP32 }, { dataType: FP32 }];


export interface GeTestEnv {
  readonly build: GeAddonBuild;
  readonly ge: GeBinding;
  readonly scratchDir: string;
  /** Load options for the test model on device 0, one slot, float32 precision. */
  options(overrides?: Partial<NativeGeLoadOptions>): NativeGeLoadOptions;
  geCount(name: string): number;
  /** Clears the GE peaks (max_concurrent_executes, max_concurrent_parses). */
  resetGePeaks(): void;
  aclCount(name: string): number;
  /** What a loaded model holds in the simulation; NOTHING_HELD once every model is unloaded. */
  resources(): Record<string, number>;
  cleanup(): void;
}

export const NOTHING_HELD = { sessions: 0, ge_allocated_outputs: 0, device_allocs: 0, device_bytes: 0, streams: 0 };

// Kept at float32: GE's own inference default is fp16, which the simulation rounds like.
export const GLOBAL_OPTIONS = { 'ge.exec.precision_mode': 'must_keep_origin_dtype' };

export async function setUpGeTests(): Promise<GeTestEnv> {
  const build = await buildGeAddon();
  const require = createRequire(import.meta.url);
  const ge = require(build.addon) as GeBinding;
  const counters = require(buildSimulatedAcl().countersAddon) as SimCounters;
  const scratchDir = mkdtempSync(join(tmpdir(), 'serve-fn-ge-'));
  const geCount = (name: string) => counters.counter(build.cann.geRunnerLibrary, name);
  const aclCount = (name: string) => counters.counter(build.cann.aclLibrary, name);
  return {
    build,
    ge,
    scratchDir,
    options: (overrides = {}) => ({
      libraryPath: build.cann.lib64,
      deviceId: 0,
      bytes: denseModel(),
      slots: 1,
      globalOptions: GLOBAL_OPTIONS,
      sessionOptions: {},
      graphOptions: {},
      parserOptions: {},
      ...overrides,
    }),
    geCount,
    resetGePeaks: () => counters.resetPeaks(build.cann.geRunnerLibrary),
    aclCount,
    resources: () => ({
      sessions: geCount('sessions'),
      ge_allocated_outputs: geCount('ge_allocated_outputs'),
      device_allocs: aclCount('device_allocs'),
      device_bytes: aclCount('device_bytes'),
      streams: aclCount('streams'),
    }),
    cleanup: () => rmSync(scratchDir, { recursive: true, force: true }),
  };
}

export const rejection = (promise: Promise<unknown>): Promise<GeError | undefined> =>
  promise.then(() => undefined, (err: unknown) => err as GeError);

/** Resolves once the GE counter has grown past `from`: the simulation has reached that call. */
export async function reached(count: (name: string) => number, name: string, from: number): Promise<void> {
  while (count(name) <= from) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Runs fn with the simulation's environment variables set (it reads them at each call). */
export async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const key of Object.keys(vars)) delete process.env[key];
  }
}
