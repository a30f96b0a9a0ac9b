import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import type { NativeGeLoadOptions, NativeGeTensor, NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { buildGeAddon, type GeAddonBuild } from './build-ge-addon.js';
import { buildSimulatedAcl } from './build-sim.js';
import { REAL_HARDWARE } from './npu-test-env.js';

/**
 * The addon's GE route (serve_fn_npu_ge.node) against the simulated CANN home: results against
 * onnxruntime-node on the CPU, the GE call order and counts from the simulation's counters, and
 * the errors of every GE call. Simulation only: nothing here has run on Ascend hardware.
 */

type GeBinding = Required<Pick<NpuNativeBinding, 'geInfo' | 'loadGeModel' | 'convertGeModel'>> & NpuNativeBinding;
type GeError = Error & { geFunction?: string; geStatus?: number; geMessage?: string };

interface SimCounters {
  counter(libraryFile: string, name: string): number;
}

const FP32 = 0;
const X_DIMS = [4, 3];

/**
 * y = Relu(x · W + b) [batch, 2] and z = x + x [batch, 3]: two outputs of different shapes, in
 * that order. The batch is 4, or symbolic when named.
 */
function denseModel(batch: number | string = 4): Uint8Array {
  return buildOnnxModel({
    inputs: [{ name: 'x', datatype: 'FP32', shape: [batch, 3] }],
    outputs: [
      { name: 'y', datatype: 'FP32', shape: [batch, 2] },
      { name: 'z', datatype: 'FP32', shape: [batch, 3] },
    ],
    initializers: [
      { name: 'W', datatype: 'FP32', shape: [3, 2], data: [0.5, -1.25, 2, 0.75, -0.3, 1.1] },
      { name: 'b', datatype: 'FP32', shape: [2], data: [0.1, -0.2] },
    ],
    nodes: [
      { op: 'MatMul', inputs: ['x', 'W'], outputs: ['xw'] },
      { op: 'Add', inputs: ['xw', 'b'], outputs: ['pre'] },
      { op: 'Relu', inputs: ['pre'], outputs: ['y'] },
      { op: 'Add', inputs: ['x', 'x'], outputs: ['z'] },
    ],
  });
}

/** `rows` rows of x whose results have positive and clipped values; the seed makes each call's differ. */
function input(seed: number, rows = 4): Float32Array {
  return Float32Array.from({ length: rows * 3 }, (_, i) => ((i * 7 + seed * 3) % 11) / 4 - 1.3);
}

async function reference(x: Float32Array): Promise<{ y: number[]; z: number[] }> {
  const session = await ort.InferenceSession.create(denseModel('batch'));
  const out = await session.run({ x: new ort.Tensor('float32', x, [x.length / 3, 3]) });
  return { y: Array.from(out.y!.data as Float32Array), z: Array.from(out.z!.data as Float32Array) };
}

/** Rounds float32 values to the nearest binary16 and back, by ONNX Runtime's own Cast. */
async function throughHalf(values: Float32Array, dims: readonly number[]): Promise<Float32Array> {
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
async function halfReference(x: Float32Array): Promise<{ y: number[]; z: number[] }> {
  const exact = await reference(await throughHalf(x, X_DIMS));
  return {
    y: Array.from(await throughHalf(Float32Array.from(exact.y), [4, 2])),
    z: Array.from(await throughHalf(Float32Array.from(exact.z), X_DIMS)),
  };
}

const tensor = (x: Float32Array): NativeGeTensor => ({ data: x, dims: X_DIMS, dataType: FP32 });
const CALLER_OUTPUTS = [{ dataType: FP32, dims: [4, 2] }, { dataType: FP32, dims: X_DIMS }];
const GE_OUTPUTS = [{ dataType: FP32 }, { dataType: FP32 }];

describe.skipIf(REAL_HARDWARE)('GE route of the addon (simulated CANN)', () => {
  let build: GeAddonBuild;
  let ge: GeBinding;
  let counters: SimCounters;
  let scratch: string;
  // Kept at float32: GE's own inference default is fp16, which the simulation rounds like.
  const globalOptions = { 'ge.exec.precision_mode': 'must_keep_origin_dtype' };
  const options = (overrides: Partial<NativeGeLoadOptions> = {}): NativeGeLoadOptions => ({
    libraryPath: build.cann.lib64,
    deviceId: 0,
    bytes: denseModel(),
    slots: 1,
    globalOptions,
    sessionOptions: {},
    graphOptions: {},
    parserOptions: {},
    ...overrides,
  });
  const geCount = (name: string) => counters.counter(build.cann.geRunnerLibrary, name);
  const aclCount = (name: string) => counters.counter(build.cann.aclLibrary, name);
  const resources = () => ({
    sessions: geCount('sessions'),
    ge_allocated_outputs: geCount('ge_allocated_outputs'),
    device_allocs: aclCount('device_allocs'),
    device_bytes: aclCount('device_bytes'),
    streams: aclCount('streams'),
  });
  const nothingHeld = { sessions: 0, ge_allocated_outputs: 0, device_allocs: 0, device_bytes: 0, streams: 0 };
  const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (err: unknown) => err as GeError);
  const withEnv = async <T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> => {
    Object.assign(process.env, vars);
    try {
      return await fn();
    } finally {
      for (const key of Object.keys(vars)) delete process.env[key];
    }
  };

  beforeAll(async () => {
    build = await buildGeAddon();
    const require = createRequire(import.meta.url);
    ge = require(build.addon) as GeBinding;
    counters = require(buildSimulatedAcl().countersAddon) as SimCounters;
    scratch = mkdtempSync(join(tmpdir(), 'serve-fn-ge-'));
  }, 600_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('says what it was built against', () => {
    expect(ge.geInfo()).toEqual({ cannHome: build.cann.home, headers: 'CANN 8.5.0' });
  });

  it('is what loadNpuBinding() loads when SERVE_FN_NPU_ADDON names it, and says so when the file is missing', async () => {
    const loadWith = async (file: string) => {
      vi.resetModules();
      process.env.SERVE_FN_NPU_ADDON = file;
      try {
        return (await import('../../src/backends/npu/native-binding.js')).loadNpuBinding();
      } finally {
        delete process.env.SERVE_FN_NPU_ADDON;
        vi.resetModules();
      }
    };
    const loaded = await loadWith(build.addon);
    expect('binding' in loaded && loaded.binding).toBe(ge);
    const missing = join(scratch, 'none.node');
    expect(await loadWith(missing)).toEqual({
      reason: expect.stringContaining(`tried ${missing} (named by SERVE_FN_NPU_ADDON; no such file)`),
    });
  });

  it('leaves the plain addon as it was: no GE exports and no GE library among its imports', () => {
    // What `npm run build:native` builds here, without a CANN home.
    const plain = fileURLToPath(new URL('../../native/build/Release/serve_fn_npu.node', import.meta.url));
    const binding = createRequire(import.meta.url)(plain) as NpuNativeBinding;
    expect([binding.geInfo, binding.loadGeModel, binding.convertGeModel]).toEqual([undefined, undefined, undefined]);
    expect(typeof binding.loadModel).toBe('function');
    const imports = execFileSync('nm', ['-D', '--undefined-only', plain], { encoding: 'utf8' });
    expect(imports).not.toMatch(/_ZN2ge|_ZNK2ge/);
  });

  it('links GE with the old libstdc++ ABI: no __cxx11 symbol among its imports', () => {
    const imports = execFileSync('nm', ['-D', '--undefined-only', build.addon], { encoding: 'utf8' });
    expect(imports).toContain('_ZN2ge7SessionC1ERKSt3mapINS_12AscendStringES2_St4lessIS2_ESaISt4pairIKS2_S2_EEE');
    expect(imports).toContain('_ZN2ge14GetSizeInBytesElNS_8DataTypeE');
    expect(imports.split('\n').filter((line) => line.includes('__cxx11'))).toEqual([]);
  });

  it.each([1, 3])('runs every one of %i slots with caller-allocated outputs, as onnxruntime-node does', async (slots) => {
    const model = await ge.loadGeModel(options({ slots }));
    expect(model.slots).toBe(slots);
    expect(model.unloaded).toBe(false);
    for (let slot = 0; slot < slots; slot++) {
      const x = input(slot);
      const [y, z] = await model.execute(slot, [tensor(x)], CALLER_OUTPUTS);
      const expected = await reference(x);
      expect(y!.dims).toEqual([4, 2]);
      expect(z!.dims).toEqual(X_DIMS);
      expect(Array.from(new Float32Array(y!.data))).toEqual(expected.y);
      expect(Array.from(new Float32Array(z!.data))).toEqual(expected.z);
    }
    await model.unload();
    expect(model.unloaded).toBe(true);
    expect(resources()).toEqual(nothingHeld);
  });

  it('puts the sessions, streams and buffers of a model on its device (ge.session_device_id)', async () => {
    const [zero, one] = await Promise.all([ge.loadGeModel(options({ slots: 2 })), ge.loadGeModel(options({ slots: 2, deviceId: 1 }))]);
    for (const model of [zero, one]) {
      for (let slot = 0; slot < 2; slot++) {
        const [y] = await model.execute(slot, [tensor(input(slot + 20))], slot ? GE_OUTPUTS : CALLER_OUTPUTS);
        expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(slot + 20))).y);
      }
    }
    await Promise.all([zero.unload(), one.unload()]);
    expect(resources()).toEqual(nothingHeld);
  });

  it('lets GE allocate the outputs when one has no dims, and clears them after the copy', async () => {
    const model = await ge.loadGeModel(options({ slots: 2 }));
    for (const [slot, outputs] of [[1, GE_OUTPUTS], [0, [{ dataType: FP32, dims: [4, 2] }, { dataType: FP32 }]], [1, []]] as const) {
      const x = input(10 + slot);
      const results = await model.execute(slot, [tensor(x)], outputs);
      const expected = await reference(x);
      expect(results.map((r) => r.dims)).toEqual([[4, 2], X_DIMS]);
      expect(Array.from(new Float32Array(results[0]!.data))).toEqual(expected.y);
      expect(Array.from(new Float32Array(results[1]!.data))).toEqual(expected.z);
      expect(geCount('ge_allocated_outputs')).toBe(0);
    }
    await model.unload();
    expect(resources()).toEqual(nothingHeld);
  });

  it('compiles the gears the graph options give and runs each; GE refuses a batch between them', async () => {
    const model = await ge.loadGeModel(
      options({ bytes: denseModel('batch'), slots: 2, graphOptions: { 'ge.inputShape': 'x:-1,3', 'ge.dynamicDims': '1;4' } }),
    );
    for (const [slot, rows] of [[0, 1], [1, 4], [0, 4], [1, 1]] as const) {
      const x = input(rows + slot, rows);
      const outputs = slot ? GE_OUTPUTS : [{ dataType: FP32, dims: [rows, 2] }, { dataType: FP32, dims: [rows, 3] }];
      const [y, z] = await model.execute(slot, [{ data: x, dims: [rows, 3], dataType: FP32 }], outputs);
      const expected = await reference(x);
      expect([y!.dims, z!.dims]).toEqual([[rows, 2], [rows, 3]]);
      expect(Array.from(new Float32Array(y!.data))).toEqual(expected.y);
      expect(Array.from(new Float32Array(z!.data))).toEqual(expected.z);
    }
    const between = await rejection(model.execute(0, [{ data: input(0, 2), dims: [2, 3], dataType: FP32 }], GE_OUTPUTS));
    expect(between).toMatchObject({ geFunction: 'ExecuteGraphWithStreamAsync', geMessage: expect.stringContaining('ge.dynamicDims') });
    await model.unload();
    expect(resources()).toEqual(nothingHeld);
  });

  it('passes parser options and session options through: input_shape fixes the batch, a session asks for fp16', async () => {
    const model = await ge.loadGeModel(
      options({
        bytes: denseModel('batch'),
        parserOptions: { input_shape: 'x:4,3' },
        sessionOptions: { 'ge.exec.precision_mode_v2': 'fp16' },
      }),
    );
    const x = input(3);
    const [y, z] = await model.execute(0, [tensor(x)], GE_OUTPUTS);
    const expected = await halfReference(x);
    expect(Array.from(new Float32Array(y!.data))).toEqual(expected.y);
    expect(Array.from(new Float32Array(z!.data))).toEqual(expected.z);
    expect(Array.from(new Float32Array(z!.data))).not.toEqual((await reference(x)).z);
    const wrongBatch = await rejection(model.execute(0, [{ data: input(3, 1), dims: [1, 3], dataType: FP32 }], GE_OUTPUTS));
    expect(wrongBatch?.geFunction).toBe('ExecuteGraphWithStreamAsync');
    await model.unload();
    expect(resources()).toEqual(nothingHeld);
  });

  it('initialises GE once for two models, loads each slot once, and finalises after the last unload', async () => {
    const file = join(scratch, 'dense.onnx');
    writeFileSync(file, denseModel());
    const before = {
      init: geCount('ge_initialize_calls'), finalize: geCount('ge_finalize_calls'), loads: geCount('load_graph_calls'),
      parses: geCount('parse_calls'), added: geCount('graphs_added'), compiled: geCount('graphs_compiled'),
    };
    const first = await ge.loadGeModel(options({ slots: 2 }));
    const second = await ge.loadGeModel(options({ slots: 3, bytes: undefined, file }));
    expect(geCount('ge_initialize_calls') - before.init).toBe(1);
    expect(geCount('sessions')).toBe(5);
    expect(geCount('load_graph_calls') - before.loads).toBe(5);
    expect(geCount('parse_calls') - before.parses).toBe(5);
    expect(geCount('graphs_added') - before.added).toBe(5);
    expect(geCount('graphs_compiled') - before.compiled).toBe(5);
    const allocsLoaded = aclCount('device_allocs');
    for (let round = 0; round < 3; round++) {
      for (let slot = 0; slot < 3; slot++) await second.execute(slot, [tensor(input(round))], CALLER_OUTPUTS);
    }
    // Buffers are grown on first need and then reused: a second round allocates nothing more.
    const allocsUsed = aclCount('device_allocs');
    expect(allocsUsed).toBeGreaterThan(allocsLoaded);
    for (let slot = 0; slot < 3; slot++) await second.execute(slot, [tensor(input(7))], CALLER_OUTPUTS);
    expect(aclCount('device_allocs')).toBe(allocsUsed);
    expect(geCount('load_graph_calls') - before.loads).toBe(5);

    await first.unload();
    expect(geCount('ge_finalize_calls') - before.finalize).toBe(0);
    expect(geCount('sessions')).toBe(3);
    await second.unload();
    expect(geCount('ge_finalize_calls') - before.finalize).toBe(1);
    expect(resources()).toEqual(nothingHeld);
  });

  it('refuses a second load whose global options differ, naming the key', async () => {
    const model = await ge.loadGeModel(options());
    const refused = await rejection(ge.loadGeModel(options({ globalOptions: { 'ge.exec.precision_mode': 'force_fp16' } })));
    expect(refused?.message).toBe(
      'GE global option ge.exec.precision_mode is "force_fp16" but GE was initialised in this process with ' +
        '"must_keep_origin_dtype": GEInitialize takes one set of global options per process',
    );
    expect(geCount('sessions')).toBe(1);
    await model.unload();
    expect(resources()).toEqual(nothingHeld);
  });

  it('runs different slots at once and refuses a second execute on a busy slot', async () => {
    const model = await ge.loadGeModel(options({ slots: 3 }));
    const peakBefore = geCount('max_concurrent_executes');
    await withEnv({ GE_SIM_EXECUTE_DELAY_MS: '300' }, async () => {
      const runs = [0, 1, 2].map((slot) => model.execute(slot, [tensor(input(slot))], CALLER_OUTPUTS));
      expect(() => model.execute(1, [tensor(input(1))], CALLER_OUTPUTS)).toThrow(
        new Error('execution slot 1 is busy: a slot runs one execute at a time'),
      );
      const results = await Promise.all(runs);
      for (const [slot, [y]] of results.entries()) {
        expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(slot))).y);
      }
    });
    expect(peakBefore).toBeLessThanOrEqual(1);
    expect(geCount('max_concurrent_executes')).toBe(3);
    // Unload waits for a running execute instead of pulling its buffers away.
    const running = model.execute(0, [tensor(input(4))], CALLER_OUTPUTS);
    const unloaded = model.unload();
    expect(() => model.execute(1, [tensor(input(4))], CALLER_OUTPUTS)).toThrow(new Error('the model has been unloaded'));
    expect(model.unload()).toBe(unloaded);
    expect(Array.from(new Float32Array((await running)[0]!.data))).toEqual((await reference(input(4))).y);
    await unloaded;
    expect(resources()).toEqual(nothingHeld);
  });

  it.each(['GEInitialize', 'aclgrphParseONNXFromMem', 'AddGraph', 'CompileGraph', 'LoadGraph'])(
    'surfaces a failing %s on load with its status and GE message, and leaks nothing',
    async (fn) => {
      const finalizeBefore = geCount('ge_finalize_calls');
      const error = await withEnv({ GE_SIM_FAIL: `${fn}:4242` }, () => rejection(ge.loadGeModel(options({ slots: 2 }))));
      expect(error).toMatchObject({ geFunction: fn, geStatus: 4242, geMessage: `[sim ge 4242] ${fn}: injected failure` });
      expect(error?.message).toBe(`${fn} failed with GE status 4242: [sim ge 4242] ${fn}: injected failure`);
      expect(resources()).toEqual(nothingHeld);
      // GE was initialised (except when that failed) and so is finalised again.
      expect(geCount('ge_finalize_calls') - finalizeBefore).toBe(fn === 'GEInitialize' ? 0 : 1);
    },
  );

  it('surfaces a failing aclgrphParseONNX (a file) with the default status', async () => {
    const file = join(scratch, 'parse.onnx');
    writeFileSync(file, denseModel());
    const error = await withEnv({ GE_SIM_FAIL: 'aclgrphParseONNX' }, () =>
      rejection(ge.loadGeModel(options({ bytes: undefined, file }))),
    );
    expect(error).toMatchObject({ geFunction: 'aclgrphParseONNX', geStatus: 1343225857 });
    expect(resources()).toEqual(nothingHeld);
  });

  it('surfaces a failing execute and a failing RemoveGraph, and the model keeps working / still frees everything', async () => {
    const model = await ge.loadGeModel(options({ slots: 2 }));
    const failed = await withEnv({ GE_SIM_FAIL: 'ExecuteGraphWithStreamAsync:77' }, () =>
      rejection(model.execute(1, [tensor(input(1))], GE_OUTPUTS)),
    );
    expect(failed).toMatchObject({ geFunction: 'ExecuteGraphWithStreamAsync', geStatus: 77 });
    expect(geCount('ge_allocated_outputs')).toBe(0);
    const [y] = await model.execute(1, [tensor(input(1))], CALLER_OUTPUTS);
    expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(1))).y);
    const removal = await withEnv({ GE_SIM_FAIL: 'RemoveGraph:9' }, () => rejection(model.unload()));
    expect(removal).toMatchObject({ geFunction: 'RemoveGraph', geStatus: 9 });
    expect(resources()).toEqual(nothingHeld);
  });

  it('checks execute arguments before anything runs', async () => {
    const model = await ge.loadGeModel(options({ slots: 2 }));
    expect(() => model.execute(2, [tensor(input(0))], CALLER_OUTPUTS)).toThrow(new TypeError('slot must be a whole number from 0 to 1'));
    expect(() => model.execute(0, [{ data: new Float32Array(11), dims: X_DIMS, dataType: FP32 }], CALLER_OUTPUTS)).toThrow(
      new RangeError('inputs[0] has 44 bytes; its dims and data type need 48'),
    );
    expect(() => model.execute(0, [{ data: [1, 2] as never, dims: [2], dataType: FP32 }], [])).toThrow(
      new TypeError('inputs[0].data must be an ArrayBufferView'),
    );
    expect(() => model.execute(0, [tensor(input(0))], [{ dataType: FP32, dims: [4, -2] }])).toThrow(
      new TypeError('outputs[0].dims[1] must be a whole number from 0 to 2147483648'),
    );
    expect(() => ge.loadGeModel(options({ slots: 0 }))).toThrow(new RangeError('slots must be at least 1'));
    expect(() => ge.loadGeModel(options({ graphOptions: { 'ge.x': 1 as never } }))).toThrow(new TypeError('graphOptions.ge.x must be a string'));
    await model.unload();
    expect(resources()).toEqual(nothingHeld);
  });

  it.each([['dense.om', 'dense.om'], ['plain', 'plain.om']])(
    'converts to an .om (output %s writes %s) that the OM path loads and runs, at GE\'s default fp16',
    async (output, written) => {
      const builds = geCount('build_calls');
      const { file } = await ge.convertGeModel({
        libraryPath: build.cann.lib64,
        bytes: denseModel(),
        output: join(scratch, output),
        parserOptions: {},
        buildOptions: { 'ge.socVersion': 'Ascend310P3', input_shape: 'x:4,3' },
      });
      expect(file).toBe(join(scratch, written));
      expect(existsSync(`${file}.om`)).toBe(false);
      expect(geCount('build_calls') - builds).toBe(1);
      const om = await ge.loadModel({ libraryPath: build.cann.lib64, deviceId: 0, file });
      const x = input(5);
      const [y, z] = await om.execute([x], 4);
      const expected = await halfReference(x);
      expect(Array.from(new Float32Array(y!))).toEqual(expected.y);
      expect(Array.from(new Float32Array(z!))).toEqual(expected.z);
      // fp16 shows: the float32 answer differs.
      expect(Array.from(new Float32Array(z!))).not.toEqual((await reference(x)).z);
      await om.unload();
      expect(resources()).toEqual(nothingHeld);
    },
  );

  it.each(['aclgrphBuildInitialize', 'aclgrphBuildModel', 'aclgrphSaveModel'])(
    'surfaces a failing %s on convert',
    async (fn) => {
      const output = join(scratch, `failed-${fn}.om`);
      const error = await withEnv({ GE_SIM_FAIL: fn }, () =>
        rejection(ge.convertGeModel({ libraryPath: build.cann.lib64, bytes: denseModel(), output, parserOptions: {}, buildOptions: { 'ge.socVersion': 'Ascend310P3' } })),
      );
      expect(error).toMatchObject({ geFunction: fn, geStatus: 1343225857 });
      expect(existsSync(output)).toBe(false);
      expect(resources()).toEqual(nothingHeld);
    },
  );
});
