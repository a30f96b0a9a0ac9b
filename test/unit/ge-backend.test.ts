import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BackendSession } from '../../src/backends/backend.js';
import { GeBackend } from '../../src/backends/npu/ge-backend.js';
import {
  GE_BUILD_HINT, type LibraryProbe, type NativeGeLoadOptions, type NativeGeModel, type NativeGeOutput, type NativeGeTensor,
  type NpuBindingLoad, type NpuNativeBinding,
} from '../../src/backends/npu/native-binding.js';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { buildAddSubModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/spec/tensor.js';
import { serveFnFailure } from '../helpers/thrown.js';

/** What the addon loader returns when a test sets it; the real loader otherwise. */
const addon = vi.hoisted(() => ({ load: undefined as NpuBindingLoad | undefined }));
vi.mock('../../src/backends/npu/native-binding.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/backends/npu/native-binding.js')>();
  return { ...actual, loadNpuBinding: () => addon.load ?? actual.loadNpuBinding() };
});

const FOUND: LibraryProbe = { found: true, path: '/cann/lib64/libascendcl.so', variant: 'ascendcl', tried: [] };
const ADD_SUB = buildAddSubModel({ size: 16 });
/** Triton's `simple` with a fixed batch of 1: nothing to split. */
const ADD_SUB_FIXED = buildOnnxModel({
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
  outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16] }],
  nodes: [
    { op: 'Add', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT0'] },
    { op: 'Sub', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT1'] },
  ],
});

/** Triton's `simple` with every dimension symbolic: only the load's shape options fix its width. */
const ADD_SUB_FREE = buildOnnxModel({
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: ['batch', 'width'] }, { name: 'INPUT1', datatype: 'INT32', shape: ['batch', 'width'] }],
  outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: ['batch', 'width'] }, { name: 'OUTPUT1', datatype: 'INT32', shape: ['batch', 'width'] }],
  nodes: [
    { op: 'Add', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT0'] },
    { op: 'Sub', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT1'] },
  ],
});

let reference: BackendSession;
let referenceFixed: BackendSession;

beforeAll(async () => {
  reference = await new OnnxBackend().load(ADD_SUB);
  referenceFixed = await new OnnxBackend().load(ADD_SUB_FIXED);
});

afterAll(async () => {
  await reference?.dispose();
  await referenceFixed?.dispose();
});

interface ExecuteCall {
  readonly slot: number;
  readonly dims: readonly (readonly number[])[];
  readonly dataTypes: readonly number[];
  readonly outputs: readonly NativeGeOutput[];
  /** INPUT0's values as the slot received them (padding included). */
  readonly input0: readonly number[];
}

/**
 * A NativeGeModel that runs each execution with ONNX Runtime on the CPU, records it, refuses a
 * busy slot as the addon does, and can hold executions until the test lets them go.
 */
class FakeGeModel implements NativeGeModel {
  readonly calls: ExecuteCall[] = [];
  readonly busy = new Set<number>();
  unloaded = false;
  unloads = 0;
  held: (() => void)[] = [];
  hold = false;
  failWith: Error | undefined;

  constructor(readonly slots: number, private readonly session: () => BackendSession) {}

  async execute(slot: number, inputs: readonly NativeGeTensor[], outputs: readonly NativeGeOutput[]): Promise<{ data: ArrayBuffer; dims: number[] }[]> {
    if (this.busy.has(slot)) throw new Error(`slot ${slot} is busy`);
    if (slot < 0 || slot >= this.slots) throw new Error(`no slot ${slot}`);
    this.busy.add(slot);
    try {
      const int32 = (t: NativeGeTensor) => new Int32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength));
      this.calls.push({ slot, dims: inputs.map((t) => [...t.dims]), dataTypes: inputs.map((t) => t.dataType), outputs, input0: [...int32(inputs[0])] });
      if (this.hold) await new Promise<void>((resolve) => this.held.push(resolve));
      if (this.failWith) throw this.failWith;
      const feeds = { INPUT0: createTensor('INPUT0', 'INT32', inputs[0].dims, int32(inputs[0])), INPUT1: createTensor('INPUT1', 'INT32', inputs[1].dims, int32(inputs[1])) };
      const result = await this.session().run(feeds);
      return ['OUTPUT0', 'OUTPUT1'].map((name) => ({ data: (result[name].data as Int32Array).slice().buffer, dims: [...result[name].shape] }));
    } finally {
      this.busy.delete(slot);
    }
  }

  release(): void {
    const waiting = this.held.splice(0);
    for (const go of waiting) go();
  }

  async unload(): Promise<void> {
    this.unloads++;
    this.unloaded = true;
  }
}

function fakeBinding(model: NativeGeModel | Error, options: { probe?: LibraryProbe; withGe?: boolean } = {}) {
  const loads: NativeGeLoadOptions[] = [];
  const binding: NpuNativeBinding = {
    probeLibrary: () => options.probe ?? FOUND,
    describeDevices: () => Promise.reject(new Error('not used')),
    loadModel: () => Promise.reject(new Error('not used')),
    ...(options.withGe === false ? {} : {
      loadGeModel: async (load: NativeGeLoadOptions) => {
        loads.push(load);
        if (model instanceof Error) throw model;
        return model;
      },
    }),
  };
  return { binding, loads };
}

/** `rows` rows of INPUT0 = 100·row + column and INPUT1 = row − column, distinct enough to see any row moved. */
function batch(rows: number): Record<string, Tensor> {
  const a = Int32Array.from({ length: rows * 16 }, (_, i) => 100 * Math.floor(i / 16) + (i % 16));
  const b = Int32Array.from({ length: rows * 16 }, (_, i) => Math.floor(i / 16) - (i % 16));
  return { INPUT0: createTensor('INPUT0', 'INT32', [rows, 16], a), INPUT1: createTensor('INPUT1', 'INT32', [rows, 16], b) };
}

async function loaded(slots: number, options: Record<string, unknown> = {}, onnx: Uint8Array = ADD_SUB) {
  const model = new FakeGeModel(slots, () => (onnx === ADD_SUB_FIXED ? referenceFixed : reference));
  const { binding, loads } = fakeBinding(model);
  const session = await new GeBackend({ binding }).load(onnx, { device: { kind: 'npu', id: 1 }, options: { slots, ...options } });
  return { model, session, loads };
}

describe('GeBackend', () => {
  it('is available only with an addon built with GE and an AscendCL library', async () => {
    expect(await new GeBackend({ binding: fakeBinding(new Error('unused')).binding }).available()).toBe(true);
    const plain = await new GeBackend({ binding: fakeBinding(new Error('unused'), { withGe: false }).binding }).available();
    // The same words as doctor's GE line and serve-fn convert: one hint.
    expect(plain).toBe(GE_BUILD_HINT);
    const missing = await new GeBackend({ binding: fakeBinding(new Error('unused'), { probe: { found: false, tried: ['/nowhere/libascendcl.so'] } }).binding }).available();
    expect(missing).toContain('AscendCL library not found; tried /nowhere/libascendcl.so');
  });

  it('says why a GE addon that exists did not load, instead of "built without CANN"', async () => {
    const geLoadError = '/repo/native/build/Release/serve_fn_npu_ge.node: libge_runner.so: cannot open shared object file: No such file or directory';
    addon.load = { binding: fakeBinding(new Error('unused'), { withGe: false }).binding, geLoadError };
    try {
      const reason = await new GeBackend().available();
      expect(reason).toContain(`serve_fn_npu_ge.node was found but could not be loaded, so the native addon without the GE route was loaded instead: ${geLoadError}`);
      expect(reason).not.toContain('built without CANN');
      const refused = await serveFnFailure(new GeBackend().load(ADD_SUB));
      expect([refused.code, refused.message]).toEqual(['SF_ERR_NPU_UNAVAILABLE', expect.stringContaining(geLoadError)]);
    } finally {
      addon.load = undefined;
    }
  });

  it('loads on the requested NPU with the slots and each option in its GE scope, precision "origin" by default', async () => {
    const { loads, session } = await loaded(2, {
      'ge.aicoreNum': '12|10', 'global.ge.exec.deviceId': 1, 'session.ge.graphRunMode': '0',
      'graph.ge.dynamicNodeType': '1', input_shape: 'INPUT0:-1,16;INPUT1:-1,16',
    });
    expect(loads).toEqual([{
      libraryPath: undefined, deviceId: 1, bytes: ADD_SUB, slots: 2,
      globalOptions: { 'ge.exec.deviceId': '1' },
      sessionOptions: { 'ge.aicoreNum': '12|10', 'ge.graphRunMode': '0', 'ge.exec.precision_mode_v2': 'origin' },
      graphOptions: { 'ge.dynamicNodeType': '1' },
      parserOptions: { input_shape: 'INPUT0:-1,16;INPUT1:-1,16' },
    }]);
    expect(session.backend).toBe('npu_ge');
  });

  it('binds cores per slot: ge.aicoreNum goes to each Session whatever its scope, never to GEInitialize', async () => {
    for (const key of ['ge.aicoreNum', 'global.ge.aicoreNum', 'session.ge.aicoreNum', 'graph.ge.aicoreNum']) {
      const [load] = (await loaded(1, { [key]: '8|16' })).loads;
      expect([key, load.globalOptions, load.sessionOptions, load.graphOptions]).toEqual([
        key, {}, { 'ge.aicoreNum': '8|16', 'ge.exec.precision_mode_v2': 'origin' }, {},
      ]);
    }
  });

  it('leaves precision to the user when any scope sets a precision mode', async () => {
    expect((await loaded(1, { 'session.ge.exec.precision_mode_v2': 'fp16' })).loads[0].sessionOptions).toEqual({ 'ge.exec.precision_mode_v2': 'fp16' });
    const v1 = (await loaded(1, { 'ge.exec.precision_mode': 'allow_fp32_to_fp16' })).loads[0];
    expect(v1.sessionOptions).toEqual({});
    expect(v1.globalOptions).toEqual({ 'ge.exec.precision_mode': 'allow_fp32_to_fp16' });
  });

  it('reads the inputs and outputs from the ONNX file, names, datatypes and dims', async () => {
    const { session } = await loaded(1);
    expect(session.metadata()).toEqual({
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [-1, 16] }],
      outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [-1, 16] }, { name: 'OUTPUT1', datatype: 'INT32', shape: [-1, 16] }],
    });
  });

  it('refuses other devices, unknown options and bad slot counts before touching GE', async () => {
    const { binding, loads } = fakeBinding(new Error('unused'));
    const backend = new GeBackend({ binding });
    expect((await serveFnFailure(backend.load(ADD_SUB, { device: { kind: 'cpu', id: 0 } }))).message).toBe(
      "Backend 'npu_ge' is not supported yet: device 'cpu:0'; use an NPU device such as 'npu:0'",
    );
    expect((await serveFnFailure(backend.load(ADD_SUB, { options: { threads: 2 } }))).message).toContain('unknown option threads; npu_ge takes slots, input_shape, ge.*');
    expect((await serveFnFailure(backend.load(ADD_SUB, { options: { slots: 0 } }))).message).toContain('option slots must be a whole number >= 1, got 0');
    expect((await serveFnFailure(backend.load(ADD_SUB, { options: { 'ge.x': { a: 1 } } }))).message).toContain('option ge.x must be a string');
    expect(loads).toEqual([]);
  });

  it('turns a failed GE or ACL call during the load into SF_ERR_NPU_GE / SF_ERR_NPU_ACL, keeping the cause', async () => {
    const geError = Object.assign(new Error('CompileGraph failed with GE status 1343225857: [sim ge 1343225857] CompileGraph: injected failure'), {
      geFunction: 'CompileGraph', geStatus: 1343225857, geMessage: '[sim ge 1343225857] CompileGraph: injected failure',
    });
    const ge = await serveFnFailure(new GeBackend({ binding: fakeBinding(geError).binding }).load(ADD_SUB));
    expect(ge.code).toBe('SF_ERR_NPU_GE');
    expect(ge.statusCode).toBe(500);
    expect(ge.message).toBe('CompileGraph failed with GE status 1343225857: [sim ge 1343225857] CompileGraph: injected failure');
    expect(ge.cause).toBe(geError);
    const aclError = Object.assign(new Error('aclrtSetDevice failed'), { aclFunction: 'aclrtSetDevice', aclCode: 107001, aclMessage: 'no device 9' });
    expect((await serveFnFailure(new GeBackend({ binding: fakeBinding(aclError).binding }).load(ADD_SUB))).code).toBe('SF_ERR_NPU_ACL');
    const other = await serveFnFailure(new GeBackend({ binding: fakeBinding(new Error('global option ge.aicoreNum differs')).binding }).load(ADD_SUB));
    expect(other.message).toBe("Backend 'npu_ge' could not load 'ONNX model bytes': global option ge.aicoreNum differs");
  });
});

describe('GeSession', () => {
  for (const [slots, expected] of [[1, [7]], [2, [4, 3]], [4, [2, 2, 2, 1]]] as const) {
    it(`splits 7 rows over ${slots} idle slot(s) as ${expected.join(' + ')} and joins the outputs in row order`, async () => {
      const { model, session } = await loaded(slots);
      const got = await session.run(batch(7));
      expect(model.calls.map((c) => c.slot)).toEqual(expected.map((_, i) => i));
      expect(model.calls.map((c) => c.dims[0][0])).toEqual([...expected]);
      expect(model.calls.every((c) => c.dataTypes.every((t) => t === 3))).toBe(true);
      // Known output dims: the addon allocates them ([rows, 16]).
      expect(model.calls[0].outputs).toEqual([{ dataType: 3, dims: [expected[0], 16] }, { dataType: 3, dims: [expected[0], 16] }]);
      expect(got).toEqual(await reference.run(batch(7)));
    });
  }

  it('returns only the outputs asked for, and refuses unknown ones', async () => {
    const { session } = await loaded(2);
    const got = await session.run(batch(3), ['OUTPUT1']);
    expect(Object.keys(got)).toEqual(['OUTPUT1']);
    expect(got.OUTPUT1).toEqual((await reference.run(batch(3))).OUTPUT1);
    expect((await serveFnFailure(session.run(batch(1), ['OUTPUT9']))).code).toBe('SF_ERR_OUTPUT_UNKNOWN');
  });

  it('waits for a slot when every slot is busy, serving waiting batches in arrival order, one execution per slot at a time', async () => {
    const { model, session } = await loaded(2);
    model.hold = true;
    const first = session.run(batch(4));
    const second = session.run(batch(3));
    const third = session.run(batch(2));
    await waitFor(() => model.calls.length === 2);
    // The first batch took both slots; the others wait.
    expect(model.calls.map((c) => [c.slot, c.dims[0][0]])).toEqual([[0, 2], [1, 2]]);
    model.release();
    await waitFor(() => model.calls.length === 4);
    // The second batch, first in line, got both freed slots; the third waits for them.
    expect(model.calls.slice(2).map((c) => [c.slot, c.dims[0][0]])).toEqual([[0, 2], [1, 1]]);
    model.release();
    await waitFor(() => model.calls.length === 6);
    expect(model.calls.slice(4).map((c) => [c.slot, c.dims[0][0]])).toEqual([[0, 1], [1, 1]]);
    model.release();
    const [a, b, c] = await Promise.all([first, second, third]);
    expect(a).toEqual(await reference.run(batch(4)));
    expect(b).toEqual(await reference.run(batch(3)));
    expect(c).toEqual(await reference.run(batch(2)));
  });

  it('spreads a batch that had to wait over every slot free when it is woken (4 slots, two batches of 8 rows)', async () => {
    const { model, session } = await loaded(4);
    model.hold = true;
    const first = session.run(batch(8));
    const second = session.run(batch(8));
    await waitFor(() => model.calls.length === 4);
    model.release();
    await waitFor(() => model.calls.length === 8);
    expect(model.calls.slice(4).map((c) => [c.slot, c.dims[0][0]])).toEqual([[0, 2], [1, 2], [2, 2], [3, 2]]);
    model.release();
    const expected = await reference.run(batch(8));
    expect(await Promise.all([first, second])).toEqual([expected, expected]);
  });

  it('pads each execution up to a compiled batch size (graph.ge.inputShape + ge.dynamicDims) and trims the outputs back', async () => {
    const { model, session } = await loaded(1, { 'graph.ge.inputShape': 'INPUT0:-1,16;INPUT1:-1,16', 'graph.ge.dynamicDims': '1,1;4,4' });
    const got = await session.run(batch(7));
    // 7 rows, gears 1 and 4: two executions of 4 and 3 rows, the second padded with one row of zeros.
    expect(model.calls.map((c) => c.dims)).toEqual([[[4, 16], [4, 16]], [[4, 16], [4, 16]]]);
    expect(model.calls[1].input0.slice(48)).toEqual(new Array(16).fill(0));
    expect(model.calls[1].input0.slice(0, 16)).toEqual(Array.from({ length: 16 }, (_, column) => 400 + column));
    expect(got).toEqual(await reference.run(batch(7)));
    const small = await session.run(batch(1));
    expect(model.calls.at(-1)!.dims[0]).toEqual([1, 16]);
    expect(small).toEqual(await reference.run(batch(1)));
  });

  it('runs a graph compiled for batch 1 (a parser input_shape, as static_model gives) row by row over the slots', async () => {
    const { model, session } = await loaded(2, { input_shape: 'INPUT0:1,16;INPUT1:1,16' });
    const got = await session.run(batch(5));
    expect(model.calls.map((c) => c.dims[0])).toEqual(new Array(5).fill([1, 16]));
    expect(model.calls.filter((c) => c.slot === 0)).toHaveLength(3);
    expect(model.calls.filter((c) => c.slot === 1)).toHaveLength(2);
    expect(got).toEqual(await reference.run(batch(5)));
  });

  it('runs a model without a variable batch dimension whole, on one slot', async () => {
    const { model, session } = await loaded(3, {}, ADD_SUB_FIXED);
    const got = await session.run(batch(1));
    expect(model.calls.map((c) => [c.slot, c.dims[0]])).toEqual([[0, [1, 16]]]);
    expect(got).toEqual(await referenceFixed.run(batch(1)));
    expect((await serveFnFailure(session.run(batch(2)))).code).toBe('SF_ERR_TENSOR_SHAPE');
  });

  // [what pins the shape, the load options, rows in a batch, the rows of each execution GE sees]
  for (const [name, options, rows, executions] of [
    ['graph.ge.inputShape with gears', { 'graph.ge.inputShape': 'INPUT0:-1,16;INPUT1:-1,16', 'graph.ge.dynamicDims': '1,1;4,4' }, 3, [4]],
    ['a parser input_shape (static_model)', { input_shape: 'INPUT0:1,16;INPUT1:1,16' }, 2, [1, 1]],
    ['graph.ge.inputShape fixing the batch too', { 'graph.ge.inputShape': 'INPUT0:2,16;INPUT1:2,16' }, 3, [2, 2]],
  ] as const) {
    it(`narrows the ONNX file's variable dims to what ${name} compiles, refusing other shapes with a 400 before GE runs`, async () => {
      const { model, session } = await loaded(1, options, ADD_SUB_FREE);
      expect(session.metadata().inputs.map((spec) => spec.shape)).toEqual([[-1, 16], [-1, 16]]);
      const narrow = { INPUT0: createTensor('INPUT0', 'INT32', [2, 8], new Int32Array(16)), INPUT1: createTensor('INPUT1', 'INT32', [2, 8], new Int32Array(16)) };
      const refused = await serveFnFailure(session.run(narrow));
      expect([refused.code, refused.statusCode, refused.message]).toEqual(['SF_ERR_TENSOR_SHAPE', 400, "Tensor 'INPUT0': expected shape [-1,16], got [2,8]."]);
      expect(model.calls).toEqual([]);
      // The batch dimension stays the session's to pad and split to the compiled batch sizes.
      expect(await session.run(batch(rows))).toEqual(await reference.run(batch(rows)));
      expect(model.calls.map((c) => c.dims[0][0])).toEqual([...executions]);
    });
  }

  it('checks every input against the ONNX file before running', async () => {
    const { model, session } = await loaded(1);
    expect((await serveFnFailure(session.run({ INPUT0: batch(1).INPUT0 }))).message).toBe("Expected input 'INPUT1' for model 'ONNX model bytes' is missing.");
    expect((await serveFnFailure(session.run({ ...batch(1), EXTRA: batch(1).INPUT0 }))).code).toBe('SF_ERR_TENSOR_UNEXPECTED');
    const float = createTensor('INPUT1', 'FP32', [1, 16], new Float32Array(16));
    expect((await serveFnFailure(session.run({ ...batch(1), INPUT1: float }))).code).toBe('SF_ERR_TENSOR_DATATYPE');
    expect((await serveFnFailure(session.run({ INPUT0: batch(2).INPUT0, INPUT1: batch(3).INPUT1 }))).code).toBe('SF_ERR_TENSOR_SHAPE');
    expect(model.calls).toEqual([]);
  });

  it('turns a failed execute into SF_ERR_NPU_GE and frees the slot for the next batch', async () => {
    const { model, session } = await loaded(1);
    model.failWith = Object.assign(new Error('ExecuteGraphWithStreamAsync failed'), {
      geFunction: 'ExecuteGraphWithStreamAsync', geStatus: 1343225857, geMessage: 'injected failure',
    });
    const err = await serveFnFailure(session.run(batch(2)));
    expect(err.message).toBe('ExecuteGraphWithStreamAsync failed with GE status 1343225857: injected failure');
    expect(err.cause).toBe(model.failWith);
    model.failWith = undefined;
    expect(await session.run(batch(2))).toEqual(await reference.run(batch(2)));
  });

  it('lets running batches finish on dispose, unloads once, and refuses to run afterwards', async () => {
    const { model, session } = await loaded(1);
    model.hold = true;
    const running = session.run(batch(2));
    await waitFor(() => model.calls.length === 1);
    const disposed = session.dispose();
    await Promise.resolve();
    expect(model.unloads).toBe(0);
    model.release();
    expect(await running).toEqual(await reference.run(batch(2)));
    await disposed;
    await session.dispose();
    expect(model.unloads).toBe(1);
    expect((await serveFnFailure(session.run(batch(1)))).message).toBe("Backend 'npu_ge' failed to run 'ONNX model bytes': the session has been disposed");
  });
});

/** Polls until `ready` holds (the executions above start on later turns of the event loop). */
async function waitFor(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ready(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(ready()).toBe(true);
}
