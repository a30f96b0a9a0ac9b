import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import type { GeAddonBuild } from './build-ge-addon.js';
import {
  CALLER_OUTPUTS, FP32, GE_OUTPUTS, NOTHING_HELD, X_DIMS, denseModel, halfReference, input, reference, rejection, setUpGeTests, tensor, withEnv,
  type GeBinding, type GeTestEnv,
} from './ge-test-env.js';
import { REAL_HARDWARE } from './npu-test-env.js';

/**
 * The addon's GE route (serve_fn_npu_ge.node: geInfo, loadGeModel and GeModel) against the
 * simulated CANN home: results against onnxruntime-node on the CPU, the GE call order and counts
 * from the simulation's counters, and the errors of every GE call. Simulation only.
 */

describe.skipIf(REAL_HARDWARE)('GE route of the addon (simulated CANN)', () => {
  let env: GeTestEnv;
  let build: GeAddonBuild;
  let ge: GeBinding;
  let scratch: string;

  beforeAll(async () => {
    env = await setUpGeTests();
    ({ build, ge, scratchDir: scratch } = env);
  }, 600_000);
  afterAll(() => env.cleanup());

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
    const model = await ge.loadGeModel(env.options({ slots }));
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
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('puts the sessions, streams and buffers of a model on its device (ge.session_device_id)', async () => {
    const [zero, one] = await Promise.all([ge.loadGeModel(env.options({ slots: 2 })), ge.loadGeModel(env.options({ slots: 2, deviceId: 1 }))]);
    for (const model of [zero, one]) {
      for (let slot = 0; slot < 2; slot++) {
        const [y] = await model.execute(slot, [tensor(input(slot + 20))], slot ? GE_OUTPUTS : CALLER_OUTPUTS);
        expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(slot + 20))).y);
      }
    }
    await Promise.all([zero.unload(), one.unload()]);
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('lets GE allocate the outputs when one has no dims, and clears them after the copy', async () => {
    const model = await ge.loadGeModel(env.options({ slots: 2 }));
    for (const [slot, outputs] of [[1, GE_OUTPUTS], [0, [{ dataType: FP32, dims: [4, 2] }, { dataType: FP32 }]], [1, []]] as const) {
      const x = input(10 + slot);
      const results = await model.execute(slot, [tensor(x)], outputs);
      const expected = await reference(x);
      expect(results.map((r) => r.dims)).toEqual([[4, 2], X_DIMS]);
      expect(Array.from(new Float32Array(results[0]!.data))).toEqual(expected.y);
      expect(Array.from(new Float32Array(results[1]!.data))).toEqual(expected.z);
      expect(env.geCount('ge_allocated_outputs')).toBe(0);
    }
    await model.unload();
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('compiles the gears the graph options give and runs each; GE refuses a batch between them', async () => {
    const model = await ge.loadGeModel(
      env.options({ bytes: denseModel('batch'), slots: 2, graphOptions: { 'ge.inputShape': 'x:-1,3', 'ge.dynamicDims': '1;4' } }),
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
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('passes parser options and session options through: input_shape fixes the batch, a session asks for fp16', async () => {
    const model = await ge.loadGeModel(
      env.options({
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
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('initialises GE once for two models, loads each slot once, and finalises after the last unload', async () => {
    const file = join(scratch, 'dense.onnx');
    writeFileSync(file, denseModel());
    const before = {
      init: env.geCount('ge_initialize_calls'), finalize: env.geCount('ge_finalize_calls'), loads: env.geCount('load_graph_calls'),
      parses: env.geCount('parse_calls'), added: env.geCount('graphs_added'), compiled: env.geCount('graphs_compiled'),
    };
    const first = await ge.loadGeModel(env.options({ slots: 2 }));
    const second = await ge.loadGeModel(env.options({ slots: 3, bytes: undefined, file }));
    expect(env.geCount('ge_initialize_calls') - before.init).toBe(1);
    expect(env.geCount('sessions')).toBe(5);
    expect(env.geCount('load_graph_calls') - before.loads).toBe(5);
    expect(env.geCount('parse_calls') - before.parses).toBe(5);
    expect(env.geCount('graphs_added') - before.added).toBe(5);
    expect(env.geCount('graphs_compiled') - before.compiled).toBe(5);
    const allocsLoaded = env.aclCount('device_allocs');
    for (let round = 0; round < 3; round++) {
      for (let slot = 0; slot < 3; slot++) await second.execute(slot, [tensor(input(round))], CALLER_OUTPUTS);
    }
    // Buffers are grown on first need and then reused: a second round allocates nothing more.
    const allocsUsed = env.aclCount('device_allocs');
    expect(allocsUsed).toBeGreaterThan(allocsLoaded);
    for (let slot = 0; slot < 3; slot++) await second.execute(slot, [tensor(input(7))], CALLER_OUTPUTS);
    expect(env.aclCount('device_allocs')).toBe(allocsUsed);
    expect(env.geCount('load_graph_calls') - before.loads).toBe(5);

    await first.unload();
    expect(env.geCount('ge_finalize_calls') - before.finalize).toBe(0);
    expect(env.geCount('sessions')).toBe(3);
    await second.unload();
    expect(env.geCount('ge_finalize_calls') - before.finalize).toBe(1);
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('parses one ONNX model at a time in the process, however many loads run at once', async () => {
    env.resetGePeaks();
    const parses = env.geCount('parse_calls');
    const models = await withEnv({ GE_SIM_PARSE_DELAY_MS: '50' }, () =>
      Promise.all([ge.loadGeModel(env.options({ slots: 2 })), ge.loadGeModel(env.options({ slots: 2 }))]),
    );
    expect(env.geCount('parse_calls') - parses).toBe(4);
    expect(env.geCount('max_concurrent_parses')).toBe(1);
    await Promise.all(models.map((model) => model.unload()));
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('binds, when no AscendCL is named, the one of the CANN home it was built against', async () => {
    const inits = env.aclCount('acl_init_calls');
    const model = await ge.loadGeModel(env.options({ libraryPath: undefined }));
    expect(env.aclCount('acl_init_calls') - inits).toBe(1);
    const [y] = await model.execute(0, [tensor(input(6))], CALLER_OUTPUTS);
    expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(6))).y);
    await model.unload();
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('refuses an AscendCL that is not the copy the GE libraries use, naming both', async () => {
    const other = join(scratch, 'other-acl');
    mkdirSync(other, { recursive: true });
    copyFileSync(build.cann.aclLibrary, join(other, 'libascendcl.so'));
    const refused = await rejection(ge.loadGeModel(env.options({ libraryPath: join(other, 'libascendcl.so') })));
    expect(refused?.message).toBe(
      `the AscendCL this addon bound (${join(other, 'libascendcl.so')}) is not the one the GE libraries use ` +
        `(${build.cann.lib64}/libascendcl.so): two AscendCL copies in one process do not share devices or streams; ` +
        `name ${build.cann.lib64} as the AscendCL library, or leave it unset`,
    );
    expect(env.geCount('sessions')).toBe(0);
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('refuses a second load whose global options differ, naming the key', async () => {
    const model = await ge.loadGeModel(env.options());
    const refused = await rejection(ge.loadGeModel(env.options({ globalOptions: { 'ge.exec.precision_mode': 'force_fp16' } })));
    expect(refused?.message).toBe(
      'GE global option ge.exec.precision_mode is "force_fp16" but GE was initialised in this process with ' +
        '"must_keep_origin_dtype": GEInitialize takes one set of global options per process',
    );
    expect(env.geCount('sessions')).toBe(1);
    await model.unload();
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('runs different slots at once and refuses a second execute on a busy slot', async () => {
    const model = await ge.loadGeModel(env.options({ slots: 3 }));
    const peakBefore = env.geCount('max_concurrent_executes');
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
    expect(env.geCount('max_concurrent_executes')).toBe(3);
    // Unload waits for a running execute instead of pulling its buffers away.
    const running = model.execute(0, [tensor(input(4))], CALLER_OUTPUTS);
    const unloaded = model.unload();
    expect(() => model.execute(1, [tensor(input(4))], CALLER_OUTPUTS)).toThrow(new Error('the model has been unloaded'));
    expect(model.unload()).toBe(unloaded);
    expect(Array.from(new Float32Array((await running)[0]!.data))).toEqual((await reference(input(4))).y);
    await unloaded;
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it.each(['GEInitialize', 'aclgrphParseONNXFromMem', 'AddGraph', 'CompileGraph', 'LoadGraph'])(
    'surfaces a failing %s on load with its status and GE message, and leaks nothing',
    async (fn) => {
      const finalizeBefore = env.geCount('ge_finalize_calls');
      const error = await withEnv({ GE_SIM_FAIL: `${fn}:4242` }, () => rejection(ge.loadGeModel(env.options({ slots: 2 }))));
      expect(error).toMatchObject({ geFunction: fn, geStatus: 4242, geMessage: `[sim ge 4242] ${fn}: injected failure` });
      expect(error?.message).toBe(`${fn} failed with GE status 4242: [sim ge 4242] ${fn}: injected failure`);
      expect(env.resources()).toEqual(NOTHING_HELD);
      // GE was initialised (except when that failed) and so is finalised again.
      expect(env.geCount('ge_finalize_calls') - finalizeBefore).toBe(fn === 'GEInitialize' ? 0 : 1);
    },
  );

  it('surfaces a failing aclgrphParseONNX (a file) with the default status', async () => {
    const file = join(scratch, 'parse.onnx');
    writeFileSync(file, denseModel());
    const error = await withEnv({ GE_SIM_FAIL: 'aclgrphParseONNX' }, () =>
      rejection(ge.loadGeModel(env.options({ bytes: undefined, file }))),
    );
    expect(error).toMatchObject({ geFunction: 'aclgrphParseONNX', geStatus: 1343225857 });
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('surfaces a failing execute and a failing RemoveGraph, and the model keeps working / still frees everything', async () => {
    const model = await ge.loadGeModel(env.options({ slots: 2 }));
    const failed = await withEnv({ GE_SIM_FAIL: 'ExecuteGraphWithStreamAsync:77' }, () =>
      rejection(model.execute(1, [tensor(input(1))], GE_OUTPUTS)),
    );
    expect(failed).toMatchObject({ geFunction: 'ExecuteGraphWithStreamAsync', geStatus: 77 });
    expect(env.geCount('ge_allocated_outputs')).toBe(0);
    const [y] = await model.execute(1, [tensor(input(1))], CALLER_OUTPUTS);
    expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(1))).y);
    const removal = await withEnv({ GE_SIM_FAIL: 'RemoveGraph:9' }, () => rejection(model.unload()));
    expect(removal).toMatchObject({ geFunction: 'RemoveGraph', geStatus: 9 });
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('checks execute arguments before anything runs', async () => {
    const model = await ge.loadGeModel(env.options({ slots: 2 }));
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
    expect(() => ge.loadGeModel(env.options({ slots: 0 }))).toThrow(new RangeError('slots must be at least 1'));
    expect(() => ge.loadGeModel(env.options({ graphOptions: { 'ge.x': 1 as never } }))).toThrow(new TypeError('graphOptions.ge.x must be a string'));
    await model.unload();
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

});
