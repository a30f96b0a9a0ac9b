import { afterEach, describe, expect, it } from 'vitest';
import type {
  LibraryProbe, NativeModelDescription, NativeOmModel, NativeTensorDescription, NpuNativeBinding,
} from '../../src/backends/npu/native-binding.js';
import { NpuBackend } from '../../src/backends/npu/npu-backend.js';
import { ServeFnError } from '../../src/errors/index.js';
import type { Tensor } from '../../src/spec/tensor.js';

const FOUND: LibraryProbe = { found: true, path: '/cann/lib64/libascendcl.so', variant: 'ascendcl', tried: [] };

function tensor(name: string, dims: number[], dataType = 0, byteSize = 4): NativeTensorDescription {
  return { name, dims, dataType, byteSize };
}

class FakeModel implements NativeOmModel {
  unloaded = false;
  unloads = 0;
  readonly calls: { views: readonly ArrayBufferView[]; batch: number }[] = [];
  constructor(
    private readonly description: NativeModelDescription,
    private readonly respond: (views: readonly ArrayBufferView[], batch: number) => ArrayBuffer[] = () => [],
  ) {}
  describe(): NativeModelDescription {
    return this.description;
  }
  async execute(views: readonly ArrayBufferView[], batch: number): Promise<ArrayBuffer[]> {
    this.calls.push({ views, batch });
    return this.respond(views, batch);
  }
  async unload(): Promise<void> {
    this.unloads++;
    this.unloaded = true;
  }
}

function fakeBinding(model: NativeOmModel | Error, probe: LibraryProbe = FOUND) {
  const loads: unknown[] = [];
  const binding: NpuNativeBinding = {
    probeLibrary: () => probe,
    describeDevices: () => Promise.reject(new Error('not used')),
    loadModel: async (options) => {
      loads.push(options);
      if (model instanceof Error) throw model;
      return model;
    },
  };
  return { binding, loads };
}

function aclError(fn: string, code: number, text: string): Error {
  return Object.assign(new Error(`${fn} failed`), { aclFunction: fn, aclCode: code, aclMessage: text });
}

async function failure(promise: Promise<unknown>): Promise<[string, string]> {
  const error = await promise.then(() => undefined, (err: unknown) => err);
  expect(error).toBeInstanceOf(ServeFnError);
  return [(error as ServeFnError).code, (error as ServeFnError).message];
}

const ADD: NativeModelDescription = {
  inputs: [tensor('a', [-1, 2], 0, 32), tensor('b', [-1, 2], 0, 32)],
  outputs: [tensor('sum', [-1, 2], 0, 32), tensor('flags', [-1], 12, 4)],
  batchGears: [1, 4],
};

const f32 = (shape: number[], data: number[]) => ({ datatype: 'FP32' as const, shape, data: new Float32Array(data) });

afterEach(() => {
  delete process.env.SERVE_FN_ACL_LIBRARY;
});

describe('NpuBackend', () => {
  it('is available only when the library is found, and says what it tried', async () => {
    expect(await new NpuBackend({ binding: fakeBinding(new Error()).binding }).available()).toBe(true);
    const missing = fakeBinding(new Error(), { found: false, tried: ['/a/libascendcl.so: nope', 'libacl_rt.so: nope'] });
    expect(await new NpuBackend({ binding: missing.binding }).available()).toBe(
      'AscendCL library not found; tried /a/libascendcl.so: nope; libacl_rt.so: nope. Install CANN and source its set_env.sh ' +
        '(it sets ASCEND_HOME_PATH and LD_LIBRARY_PATH), or set SERVE_FN_ACL_LIBRARY to libascendcl.so or its directory.',
    );
    expect((await failure(new NpuBackend({ binding: missing.binding }).load('m.om')))[0]).toBe('SF_ERR_NPU_UNAVAILABLE');
    expect(missing.loads).toEqual([]);
  });

  it('loads on the requested NPU, from a file or bytes, with the configured library', async () => {
    process.env.SERVE_FN_ACL_LIBRARY = '/from/env';
    const { binding, loads } = fakeBinding(new FakeModel(ADD));
    await new NpuBackend({ binding }).load('/models/add.om', { device: { kind: 'npu', id: 3 } });
    const bytes = new Uint8Array([1, 2, 3]);
    await new NpuBackend({ binding, libraryPath: '/explicit' }).load(bytes);
    expect(loads).toEqual([
      { libraryPath: '/from/env', deviceId: 3, file: '/models/add.om' },
      { libraryPath: '/explicit', deviceId: 0, bytes },
    ]);
  });

  it('refuses devices that are not NPUs', async () => {
    const { binding, loads } = fakeBinding(new FakeModel(ADD));
    expect(await failure(new NpuBackend({ binding }).load('m.om', { device: { kind: 'gpu', id: 0 } }))).toEqual([
      'SF_ERR_BACKEND_UNSUPPORTED',
      "Backend 'npu_om' is not supported yet: device 'gpu:0'; use an NPU device such as 'npu:0'",
    ]);
    expect(loads).toEqual([]);
  });

  it('maps every ACL data type serve-fn knows and reports batch gears', async () => {
    const codes = [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 27];
    const model = new FakeModel({ inputs: codes.map((code) => tensor(`t${code}`, [1], code)), outputs: [], batchGears: [] });
    const session = await new NpuBackend({ binding: fakeBinding(model).binding }).load('m.om');
    expect(session.metadata().inputs.map((spec) => spec.datatype)).toEqual([
      'FP32', 'FP16', 'INT8', 'INT32', 'UINT8', 'INT16', 'UINT16', 'UINT32', 'INT64', 'UINT64', 'FP64', 'BOOL', 'BF16',
    ]);
    expect(session.metadata()).not.toHaveProperty('batchSizes');
    const dynamic = await new NpuBackend({ binding: fakeBinding(new FakeModel(ADD)).binding }).load('m.om');
    expect(dynamic.metadata().batchSizes).toEqual([1, 4]);
  });

  it('unloads and refuses a model with a data type it cannot map', async () => {
    const model = new FakeModel({ inputs: [tensor('text', [1], 13)], outputs: [], batchGears: [] });
    expect(await failure(new NpuBackend({ binding: fakeBinding(model).binding }).load('/x/m.om'))).toEqual([
      'SF_ERR_BACKEND_LOAD_FAILED',
      "Backend 'npu_om' could not load 'm.om': tensor 'text' has aclDataType 13, which serve-fn has no datatype for",
    ]);
    expect(model.unloads).toBe(1);
  });

  it('turns native load failures into SF_ERR_NPU_ACL or SF_ERR_BACKEND_LOAD_FAILED', async () => {
    const acl = fakeBinding(aclError('aclmdlLoadFromFile', 100013, 'parse failed')).binding;
    expect(await failure(new NpuBackend({ binding: acl }).load('m.om'))).toEqual([
      'SF_ERR_NPU_ACL', 'aclmdlLoadFromFile failed with ACL error 100013: parse failed',
    ]);
    const plain = fakeBinding(new Error('the model lists batch gears but has no ascend_mbatch_shape_data input')).binding;
    expect(await failure(new NpuBackend({ binding: plain }).load(new Uint8Array(1)))).toEqual([
      'SF_ERR_BACKEND_LOAD_FAILED',
      "Backend 'npu_om' could not load 'OM model bytes': the model lists batch gears but has no ascend_mbatch_shape_data input",
    ]);
  });
});

describe('NpuSession', () => {
  const open = async (respond?: (views: readonly ArrayBufferView[], batch: number) => ArrayBuffer[]) => {
    const model = new FakeModel(ADD, respond);
    const session = await new NpuBackend({ binding: fakeBinding(model).binding }).load('/models/add.om');
    return { model, session };
  };

  it('passes zero-copy byte views in model order and types outputs by datatype', async () => {
    const { model, session } = await open((views, batch) => {
      const a = new Float32Array(views[0]!.buffer, views[0]!.byteOffset, 2 * batch);
      const b = new Float32Array(views[1]!.buffer, views[1]!.byteOffset, 2 * batch);
      return [new Float32Array(a.map((x, i) => x + b[i]!)).buffer, new Uint8Array([1, 0, 1]).buffer];
    });
    const b = { name: 'b', ...f32([3, 2], [10, 20, 30, 40, 50, 60]) };
    const a = { name: 'a', ...f32([3, 2], [1, 2, 3, 4, 5, 6]) };
    const outputs = await session.run({ b, a });
    expect(model.calls[0]!.batch).toBe(3);
    expect(model.calls[0]!.views.map((view) => view.buffer)).toEqual([a.data.buffer, b.data.buffer]);
    expect(outputs).toEqual({
      sum: { name: 'sum', datatype: 'FP32', shape: [3, 2], data: new Float32Array([11, 22, 33, 44, 55, 66]) },
      flags: { name: 'flags', datatype: 'BOOL', shape: [3], data: new Uint8Array([1, 0, 1]) },
    });
    expect(Object.keys(await session.run({ a, b }, ['flags']))).toEqual(['flags']);
  });

  it('checks every input against the metadata before running', async () => {
    const { model, session } = await open();
    const a = { name: 'a', ...f32([2, 2], [1, 2, 3, 4]) };
    const b = { name: 'b', ...f32([2, 2], [1, 2, 3, 4]) };
    const cases: [Record<string, Tensor>, string, string][] = [
      [{ a }, 'SF_ERR_TENSOR_MISSING', "Expected input 'b' for model 'add.om' is missing."],
      [{ a, b, c: a }, 'SF_ERR_TENSOR_UNEXPECTED', "Unexpected input 'c' for model 'add.om'."],
      [{ a: { ...a, datatype: 'INT32', data: new Int32Array(4) }, b }, 'SF_ERR_TENSOR_DATATYPE', "Tensor 'a': expected datatype FP32, got INT32."],
      [{ a, b: { ...b, ...f32([3, 2], [1, 2, 3, 4, 5, 6]) } }, 'SF_ERR_TENSOR_SHAPE', "Tensor 'b': expected shape [2, 2], got [3, 2]."],
      [{ a: { ...a, shape: [2, 2, 1] }, b }, 'SF_ERR_TENSOR_SHAPE', "Tensor 'a': expected shape [2, 2], got [2, 2, 1]."],
      [{ a: { ...a, ...f32([5, 2], Array(10).fill(0)) }, b }, 'SF_ERR_TENSOR_SHAPE', "Tensor 'a': expected shape [1..4, 2], got [5, 2]."],
      [{ a: { ...a, data: new Float64Array(4) }, b }, 'SF_ERR_TENSOR_DATA', "Tensor 'a': FP32 data must be a Float32Array"],
      [{ a: { ...a, data: new Float32Array(3) }, b }, 'SF_ERR_TENSOR_DATA', "Tensor 'a': holds 3 elements, shape [2, 2] needs 4"],
    ];
    for (const [inputs, code, message] of cases) expect(await failure(session.run(inputs))).toEqual([code, message]);
    expect(await failure(session.run({ a, b }, ['sum', 'nope']))).toEqual([
      'SF_ERR_OUTPUT_UNKNOWN', "Unexpected inference output 'nope' for model 'add.om'.",
    ]);
    expect(model.calls).toEqual([]);
  });

  it('turns native run failures into SF_ERR_NPU_ACL or SF_ERR_BACKEND_RUN_FAILED', async () => {
    const inputs = { a: { name: 'a', ...f32([1, 2], [1, 2]) }, b: { name: 'b', ...f32([1, 2], [1, 2]) } };
    const acl = await open(() => {
      throw aclError('aclmdlExecuteAsync', 507011, 'aicore timeout');
    });
    expect(await failure(acl.session.run(inputs))).toEqual(['SF_ERR_NPU_ACL', 'aclmdlExecuteAsync failed with ACL error 507011: aicore timeout']);
    const plain = await open(() => {
      throw new Error('the model has been unloaded');
    });
    expect(await failure(plain.session.run(inputs))).toEqual([
      'SF_ERR_BACKEND_RUN_FAILED', "Backend 'npu_om' failed to run 'add.om': the model has been unloaded",
    ]);
  });

  it('unloads once on dispose and refuses to run afterwards', async () => {
    const { model, session } = await open();
    await session.dispose();
    await session.dispose();
    expect(model.unloads).toBe(1);
    expect(await failure(session.run({}))).toEqual([
      'SF_ERR_BACKEND_RUN_FAILED', "Backend 'npu_om' failed to run 'add.om': the session has been disposed",
    ]);
  });
});
