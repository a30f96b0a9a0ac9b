import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAddSubModel, buildIdentityModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { NpuBackend } from '../../src/backends/npu/npu-backend.js';
import { LEAK_COUNTERS, REAL_HARDWARE, denseOnnxModel, f32, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';
import { encodeSimModel, writeSimModel } from './sim/om-writer.js';

interface SimOnnxAddon {
  encodeOm(library: string, onnx: Uint8Array, gears: readonly number[], fp16Compute: boolean): Uint8Array;
}

async function onCpu(onnx: Uint8Array, feeds: Record<string, ort.Tensor>): Promise<Record<string, ort.Tensor>> {
  const session = await ort.InferenceSession.create(onnx);
  try {
    return (await session.run(feeds)) as Record<string, ort.Tensor>;
  } finally {
    await session.release();
  }
}

// OM format 2 (test/native/sim/README.md): an ONNX graph inside a simulated OM, run by the simulation's ONNX runner.
describe.skipIf(REAL_HARDWARE)('simulated OM format 2 (op onnx) through the OM path', () => {
  let env: NpuTestEnv;
  let backend: NpuBackend;
  const om = (name: string, onnx: Uint8Array, options: { batchGears?: number[]; fp16Compute?: boolean } = {}) =>
    writeSimModel(join(env.scratchDir, `${name}.om`), { op: 'onnx', onnx, ...options });
  const outstanding = () => Object.fromEntries(LEAK_COUNTERS.map((name) => [name, env.counter(name)]));

  beforeAll(() => {
    env = setUpNpuTests();
    backend = new NpuBackend({ libraryPath: env.libraryPath });
  });
  afterAll(() => env.cleanup());

  it('sim_om_encode_onnx writes the layout of README.md, the same from both library variants, and refuses gears that do not increase', () => {
    const addon = createRequire(import.meta.url)(env.sim!.onnxAddon) as SimOnnxAddon;
    const onnx = denseOnnxModel();
    for (const [gears, fp16Compute] of [[[1, 4, 8], false], [[], true], [[2], true]] as const) {
      const written = new Uint8Array(addon.encodeOm(env.sim!.fullLibrary, onnx, gears, fp16Compute));
      const view = new DataView(written.buffer, written.byteOffset, written.byteLength);
      expect(new TextDecoder().decode(written.subarray(0, 8))).toBe('SFSIMOM1');
      // version 2, op 5 (onnx), flags (1: fp16 compute), reserved, gear count, ONNX byte count
      expect([8, 12, 16, 20, 24, 28].map((at) => view.getUint32(at, true))).toEqual([2, 5, fp16Compute ? 1 : 0, 0, gears.length, onnx.length]);
      expect(gears.map((_, i) => Number(view.getBigUint64(32 + 8 * i, true)))).toEqual(gears);
      expect(written.subarray(32 + 8 * gears.length)).toEqual(new Uint8Array(onnx));
      expect(new Uint8Array(addon.encodeOm(env.sim!.splitRuntimeLibrary, onnx, gears, fp16Compute))).toEqual(written);
    }
    expect(() => addon.encodeOm(env.sim!.fullLibrary, onnx, [4, 4], false)).toThrow('sim_om_encode_onnx: batch gears must be positive and increasing');
  });

  it('describes the graph, pads a batch to its gear and gives what onnxruntime-node gives on CPU', async () => {
    const onnx = denseOnnxModel();
    const session = await backend.load(om('dense', onnx, { batchGears: [1, 4, 8] }));
    expect(session.metadata()).toEqual({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 3] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 2] }],
      batchSizes: [1, 4, 8],
    });
    for (const [batch, gear] of [[3, 4], [1, 1], [5, 8], [8, 8]] as const) {
      const x = Float32Array.from({ length: batch * 3 }, (_, i) => ((i * 7) % 11) - 4.5);
      const expected = await onCpu(onnx, { x: new ort.Tensor('float32', x, [batch, 3]) });
      const outputs = await session.run({ x: { name: 'x', datatype: 'FP32', shape: [batch, 3], data: x } });
      expect(outputs.y!.shape).toEqual([batch, 2]);
      expect(outputs.y!.data).toEqual(expected.y!.data);
      expect(env.counter('last_batch_size')).toBe(gear);
    }
    await session.dispose();
  });

  it('runs a graph with two inputs and two INT32 outputs from bytes', async () => {
    const onnx = buildAddSubModel({ datatype: 'INT32', size: 4 });
    const session = await backend.load(encodeSimModel({ op: 'onnx', onnx, batchGears: [2, 4] }));
    const a = Int32Array.from([1, 2, 3, 4, -5, 6, 7, 2147483647]);
    const b = Int32Array.from([10, 20, 30, 40, 5, -6, 7, 0]);
    const expected = await onCpu(onnx, { INPUT0: new ort.Tensor('int32', a, [2, 4]), INPUT1: new ort.Tensor('int32', b, [2, 4]) });
    const outputs = await session.run({
      INPUT0: { name: 'INPUT0', datatype: 'INT32', shape: [2, 4], data: a },
      INPUT1: { name: 'INPUT1', datatype: 'INT32', shape: [2, 4], data: b },
    });
    expect(outputs.OUTPUT0!.data).toEqual(expected.OUTPUT0!.data);
    expect(outputs.OUTPUT1!.data).toEqual(expected.OUTPUT1!.data);
    await session.dispose();
  });

  it('rounds float32 to binary16 in an OM compiled with fp16 compute', async () => {
    const session = await backend.load(om('identity-fp16', buildIdentityModel('FP32', [4]), { fp16Compute: true }));
    const outputs = await session.run({ INPUT0: { name: 'INPUT0', datatype: 'FP32', shape: [4], data: f32(1 / 3, 2049, 65520, 0.5) } });
    // binary16 neighbours: 1/3 -> 0x3555 = 1365/4096; 2049 is a tie between 2048 and 2050 -> even 2048; 65520 overflows.
    expect(outputs.OUTPUT0!.data).toEqual(f32(1365 / 4096, 2048, Infinity, 0.5));
    await session.dispose();
  });

  it('refuses graphs whose shapes do not fit the gears, and bad ONNX bytes, with the reason', async () => {
    const load = (bytes: Uint8Array) => env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, bytes });
    await expect(load(encodeSimModel({ op: 'onnx', onnx: denseOnnxModel({ batch: 2 }), batchGears: [1, 2] }))).rejects.toThrow(
      "aclmdlLoadFromMem failed with ACL error 100013: [sim 100013] aclmdlLoadFromMem: input 'x' dim 0 is 2: with batch gears dim 0 must be symbolic, and every other dim fixed and positive",
    );
    await expect(load(encodeSimModel({ op: 'onnx', onnx: denseOnnxModel() }))).rejects.toThrow("input 'x' dim 0 is -1");
    await expect(load(encodeSimModel({ op: 'onnx', onnx: Uint8Array.from([9, 9, 9, 9]) }))).rejects.toThrow(
      /ACL error 100013: \[sim 100013\] aclmdlLoadFromMem: ONNX Runtime cannot load the graph: /,
    );
    const truncated = encodeSimModel({ op: 'onnx', onnx: denseOnnxModel(), batchGears: [1] }).subarray(0, 100);
    await expect(load(truncated)).rejects.toThrow(/expected \d+ ONNX bytes after the gears, found 60/);
    const notOnnxOp = encodeSimModel({ op: 'onnx', onnx: denseOnnxModel() });
    new DataView(notOnnxOp.buffer).setUint32(12, 1, true);
    await expect(load(notOnnxOp)).rejects.toThrow('format version 2 carries op 5 (onnx), not op 1');
    expect(env.counter('onnx_graphs')).toBe(0);
  });

  it('fails an execute with ACL_ERROR_GE_FAILURE when the graph gives another output size than it declares', async () => {
    // The indices of x's non-zero elements, [count, 2]: declared [batch, 2], right only when count == batch.
    const onnx = buildOnnxModel({
      inputs: [{ name: 'x', datatype: 'FP32', shape: ['batch', 3] }],
      outputs: [{ name: 'nonzero', datatype: 'INT64', shape: ['batch', 2] }],
      nodes: [
        { op: 'NonZero', inputs: ['x'], outputs: ['indices'] },
        { op: 'Transpose', inputs: ['indices'], outputs: ['nonzero'] },
      ],
    });
    const bytes = encodeSimModel({ op: 'onnx', onnx, batchGears: [2, 4] });
    const model = await env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, bytes });
    const [indices] = await model.execute([f32(0, 5, 0, 0, 0, 7)], 2);
    expect(new BigInt64Array(indices!)).toEqual(BigInt64Array.from([0n, 1n, 1n, 2n]));
    await expect(model.execute([new Float32Array(6).fill(1)], 2)).rejects.toThrow(
      /ACL error 500002: \[sim 500002\] aclmdlExecute\w*: output 'nonzero' came back as 96 bytes of aclDataType 9, the model declares 32 of 9$/,
    );
    await model.unload();
  });

  it('frees the runner with the model: nothing outstanding after unload', async () => {
    const before = outstanding();
    const graphs = env.counter('onnx_graphs');
    const file = join(env.scratchDir, 'leak.om');
    writeFileSync(file, encodeSimModel({ op: 'onnx', onnx: denseOnnxModel(), batchGears: [2] }));
    const model = await env.binding.loadModel({ libraryPath: env.libraryPath, deviceId: 0, file });
    expect(env.counter('onnx_graphs')).toBe(graphs + 1);
    const [y] = await model.execute([f32(1, 1, 1, 2, 2, 2)], 2);
    expect(new Float32Array(y!)).toHaveLength(4);
    await model.unload();
    expect(outstanding()).toEqual(before);
    expect(env.counter('onnx_graphs')).toBe(graphs);
  });
});
