import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildIdentityModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import type { Datatype } from '../../src/spec/tensor.js';
import { buildSimulatedAcl, type SimBuild } from './build-sim.js';
import { REAL_HARDWARE, denseOnnxModel } from './npu-test-env.js';

interface TensorInfo { readonly name: string; readonly dataType: number; readonly dims: number[] }
interface SimCounters { counter(libraryFile: string, name: string): number }
interface SimOnnxAddon {
  open(library: string, onnx: Uint8Array, fp16Compute: boolean): { graph: unknown; inputs: TensorInfo[]; outputs: TensorInfo[] };
  run(graph: unknown, inputs: readonly { data: ArrayBufferView; dims: readonly number[] }[]): { data: ArrayBuffer; dataType: number; dims: number[] }[];
  close(graph: unknown): void;
  encodeOm(library: string, onnx: Uint8Array, gears: readonly number[], fp16Compute: boolean): Uint8Array;
}

/** aclDataType codes (CANN AscendCL API reference, aclDataType), written out here independently of the C table. */
const ACL_TYPES: Readonly<Partial<Record<Datatype, number>>> = {
  FP32: 0, FP16: 1, INT8: 2, INT32: 3, UINT8: 4, INT16: 6, UINT16: 7, UINT32: 8, INT64: 9, UINT64: 10, FP64: 11, BOOL: 12, BF16: 27,
};
const BYTES_PER_ELEMENT: Readonly<Partial<Record<Datatype, number>>> = {
  FP32: 4, FP16: 2, INT8: 1, INT32: 4, UINT8: 1, INT16: 2, UINT16: 2, UINT32: 4, INT64: 8, UINT64: 8, FP64: 8, BOOL: 1, BF16: 2,
};

/**
 * The binary16 value nearest to x, ties to even, from the IEEE 754 definition: 10 fraction bits,
 * normal exponents -14..15, subnormals spaced 2^-24, and from halfway past the largest finite
 * value (65504) up, infinity. (Math.fround rounds to binary32, which is not this.)
 */
function nearestHalf(x: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  let exponent = Math.floor(Math.log2(a));
  if (2 ** exponent > a) exponent -= 1;
  else if (2 ** (exponent + 1) <= a) exponent += 1;
  const spacing = 2 ** (Math.max(exponent, -14) - 10);
  const steps = a / spacing;
  const below = Math.floor(steps);
  const rest = steps - below;
  const rounded = (rest > 0.5 || (rest === 0.5 && below % 2 === 1) ? below + 1 : below) * spacing;
  return Math.sign(x) * (rounded > 65504 ? Infinity : rounded);
}

function addModel(): Uint8Array {
  return buildOnnxModel({
    inputs: [{ name: 'a', datatype: 'FP32', shape: [4] }, { name: 'b', datatype: 'FP32', shape: [4] }],
    outputs: [{ name: 'sum', datatype: 'FP32', shape: [4] }],
    nodes: [{ op: 'Add', inputs: ['a', 'b'], outputs: ['sum'] }],
  });
}

describe.skipIf(REAL_HARDWARE)('simulated ONNX runner (sim-onnx.h)', () => {
  let sim: SimBuild;
  let runner: SimOnnxAddon;

  beforeAll(() => {
    sim = buildSimulatedAcl();
    runner = createRequire(import.meta.url)(sim.onnxAddon) as SimOnnxAddon;
  });

  it('reports the graph inputs and outputs with aclDataType codes and -1 for symbolic dims', () => {
    const counters = createRequire(import.meta.url)(sim.countersAddon) as SimCounters;
    const { graph, inputs, outputs } = runner.open(sim.fullLibrary, denseOnnxModel(), false);
    expect(inputs).toEqual([{ name: 'x', dataType: 0, dims: [-1, 3] }]);
    expect(outputs).toEqual([{ name: 'y', dataType: 0, dims: [-1, 2] }]);
    expect(counters.counter(sim.fullLibrary, 'onnx_graphs')).toBe(1);
    runner.close(graph);
    expect(counters.counter(sim.fullLibrary, 'onnx_graphs')).toBe(0);
  });

  it.each([['full', 'fullLibrary'], ['split', 'splitRuntimeLibrary']] as const)(
    'gives what onnxruntime-node gives (%s library)',
    async (_, library) => {
      const x = Float32Array.from([1, 2, 3, -4, 0.5, 2.5, 7, -1, 0.25, 0, 0, 0]);
      const expected = await (await ort.InferenceSession.create(denseOnnxModel())).run({ x: new ort.Tensor('float32', x, [4, 3]) });
      const { graph } = runner.open(sim[library], denseOnnxModel(), false);
      const [y] = runner.run(graph, [{ data: x, dims: [4, 3] }]);
      runner.close(graph);
      expect(y.dims).toEqual([4, 2]);
      expect(y.dataType).toBe(0);
      expect(Array.from(new Float32Array(y.data))).toEqual(Array.from(expected.y.data as Float32Array));
      expect(Array.from(new Float32Array(y.data)).some((v) => v > 0)).toBe(true);
    },
  );

  it.each(Object.keys(ACL_TYPES) as Datatype[])('maps ONNX %s to its aclDataType and passes its bytes through', (datatype) => {
    const { graph, inputs, outputs } = runner.open(sim.fullLibrary, buildIdentityModel(datatype, ['batch', 3]), false);
    expect(inputs[0].dataType).toBe(ACL_TYPES[datatype]);
    expect(outputs[0].dataType).toBe(ACL_TYPES[datatype]);
    const bytes = Uint8Array.from({ length: 2 * 3 * BYTES_PER_ELEMENT[datatype]! }, (_, i) => (datatype === 'BOOL' ? i % 2 : (i * 37 + 11) % 251));
    const [out] = runner.run(graph, [{ data: bytes, dims: [2, 3] }]);
    runner.close(graph);
    expect(out).toMatchObject({ dataType: ACL_TYPES[datatype], dims: [2, 3] });
    expect(new Uint8Array(out.data)).toEqual(bytes);
  });

  it('rounds float32 inputs and outputs to binary16 (ties to even) when fp16Compute is set', () => {
    const values = [
      1 / 3, -2.718281828, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2049, 2051, 65504, 65519, 65520, -70000, 2 ** -24, 2 ** -25,
      3 * 2 ** -25, 2 ** -14 - 2 ** -25, 1e-10, -0, Infinity, NaN, 123.456, 0.1,
    ];
    const x = Float32Array.from(values);
    const identity = runner.open(sim.fullLibrary, buildIdentityModel('FP32', [values.length]), true);
    const [out] = runner.run(identity.graph, [{ data: x, dims: [values.length] }]);
    runner.close(identity.graph);
    expect(Array.from(new Float32Array(out.data))).toEqual(Array.from(x, nearestHalf));
    expect(Array.from(new Float32Array(out.data))).not.toEqual(Array.from(x));

    // The sum of two halves is computed in float32 and rounded again on the way out.
    const a = Float32Array.from([1 / 3, 1000.1, 65000, 2 ** -20]);
    const b = Float32Array.from([1 / 7, 0.06, 600, 2 ** -20]);
    const add = runner.open(sim.fullLibrary, addModel(), true);
    const [sum] = runner.run(add.graph, [{ data: a, dims: [4] }, { data: b, dims: [4] }]);
    runner.close(add.graph);
    const expected = Array.from(a, (v, i) => nearestHalf(Math.fround(nearestHalf(v) + nearestHalf(b[i]))));
    expect(Array.from(new Float32Array(sum.data))).toEqual(expected);
    expect(Array.from(a)).toEqual(Array.from(Float32Array.from([1 / 3, 1000.1, 65000, 2 ** -20])));
  });

  it('refuses bytes that are not ONNX, a shape the graph does not take and a type without an aclDataType', () => {
    expect(() => runner.open(sim.fullLibrary, Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]), false)).toThrow(/^ONNX Runtime cannot load the graph: .+/);
    const { graph } = runner.open(sim.fullLibrary, denseOnnxModel(), false);
    expect(() => runner.run(graph, [{ data: new Float32Array(8), dims: [2, 4] }])).toThrow("input 'x' dim 1 is 4, the graph declares 3");
    expect(() => runner.run(graph, [{ data: new Float32Array(3), dims: [3] }])).toThrow("input 'x' has 1 dims, the graph declares 2");
    runner.close(graph);
    expect(() => runner.open(sim.fullLibrary, buildIdentityModel('BYTES'), false)).toThrow(
      "input 'INPUT0' has ONNX element type 8, which has no aclDataType in the simulation",
    );
  });

  it('says why when SIM_ORT_LIBRARY is unset or not ONNX Runtime', () => {
    const attempt = (ortLibrary: string | undefined): string => {
      const script = `try { require(${JSON.stringify(sim.onnxAddon)}).open(${JSON.stringify(sim.fullLibrary)}, new Uint8Array([1]), false) } catch (e) { process.stdout.write(e.message) }`;
      const env = { ...process.env, SIM_ORT_LIBRARY: ortLibrary };
      if (ortLibrary === undefined) delete env.SIM_ORT_LIBRARY;
      return execFileSync(process.execPath, ['-e', script], { env, encoding: 'utf8' });
    };
    expect(attempt(undefined)).toMatch(/^SIM_ORT_LIBRARY is not set: .*libonnxruntime\.so\.1/);
    expect(attempt(sim.fullLibrary)).toBe(`SIM_ORT_LIBRARY=${sim.fullLibrary} is not ONNX Runtime: it exports no OrtGetApiBase`);
    expect(attempt('/nonexistent/libonnxruntime.so.1')).toMatch(/^SIM_ORT_LIBRARY=\/nonexistent\/libonnxruntime\.so\.1 cannot be loaded: /);
  });
});
