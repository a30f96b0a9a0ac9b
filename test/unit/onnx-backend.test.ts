import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { OnnxBackend, type OrtRuntime } from '../../src/backends/onnx/onnx-backend.js';
import { buildAddSubModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnError } from '../../src/errors/index.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';

async function rejection(promise: Promise<unknown>): Promise<ServeFnError> {
  try {
    await promise;
  } catch (err) {
    return err as ServeFnError;
  }
  throw new Error('expected a rejection');
}

const SINGLE_THREAD = { options: { intraOpNumThreads: 1, interOpNumThreads: 1 } };
const range = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

describe('OnnxBackend with onnxruntime-node', () => {
  const backend = new OnnxBackend();
  const simple = buildAddSubModel();
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-onnx-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is available', async () => {
    expect(backend.name).toBe('onnxruntime');
    expect(await backend.available()).toBe(true);
  });

  it("reads the simple model's metadata, symbolic batch dimension as -1", async () => {
    const session = await backend.load(simple, SINGLE_THREAD);
    expect(session.backend).toBe('onnxruntime');
    expect(session.metadata()).toEqual({
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [-1, 16] },
      ],
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [-1, 16] },
        { name: 'OUTPUT1', datatype: 'INT32', shape: [-1, 16] },
      ],
    });
    await session.dispose();
  });

  it('runs add/sub on a batch of two, from a file path', async () => {
    const path = join(dir, 'simple.onnx');
    writeFileSync(path, simple);
    const session = await backend.load(path, { ...SINGLE_THREAD, options: { ...SINGLE_THREAD.options, graphOptimizationLevel: 'all', enableCpuMemArena: false } });
    const a = range(32, (i) => i);
    const b = range(32, (i) => 2 * i - 5);
    const outputs = await session.run({
      INPUT0: createTensor('INPUT0', 'INT32', [2, 16], a),
      INPUT1: createTensor('INPUT1', 'INT32', [2, 16], b),
    });
    expect(outputs).toEqual({
      OUTPUT0: { name: 'OUTPUT0', datatype: 'INT32', shape: [2, 16], data: Int32Array.from(a, (v, i) => v + b[i]!) },
      OUTPUT1: { name: 'OUTPUT1', datatype: 'INT32', shape: [2, 16], data: Int32Array.from(a, (v, i) => v - b[i]!) },
    });
    await session.dispose();
  });

  it('returns only the outputs asked for', async () => {
    const session = await backend.load(simple, SINGLE_THREAD);
    const ones = createTensor('x', 'INT32', [1, 16], range(16, () => 1));
    const outputs = await session.run({ INPUT0: ones, INPUT1: ones }, ['OUTPUT1']);
    expect(Object.keys(outputs)).toEqual(['OUTPUT1']);
    expect(outputs.OUTPUT1!.data).toEqual(new Int32Array(16));
    await session.dispose();
  });

  it("wraps ONNX Runtime's run errors with its message", async () => {
    const session = await backend.load(simple, SINGLE_THREAD);
    const label = `<${simple.byteLength}-byte ONNX model>`;
    const ints = createTensor('INPUT1', 'INT32', [1, 16], new Int32Array(16));
    const floats = createTensor('INPUT0', 'FP32', [1, 16], new Float32Array(16));
    const wrongType = await rejection(session.run({ INPUT0: floats, INPUT1: ints }));
    expect(wrongType.code).toBe('SF_ERR_BACKEND_INPUT_REJECTED');
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.message).toBe(
      `Backend 'onnxruntime' refused the inputs: Unexpected input data type. Actual: (tensor(float)) , expected: (tensor(int32))`,
    );
    const missing = await rejection(session.run({ INPUT0: ints }));
    expect(missing.message).toBe(`Backend 'onnxruntime' failed to run '${label}': input 'INPUT1' is missing in 'feeds'.`);
    const badOutput = await rejection(session.run({ INPUT0: ints, INPUT1: ints }, ['OUTPUT9']));
    expect(badOutput.message).toBe(`Backend 'onnxruntime' failed to run '${label}': 'fetches' contains invalid output name: OUTPUT9.`);
    await session.dispose();
  });

  it("answers ONNX Runtime's checks of the inputs against the model (dims, rank) as the client's error, 400", async () => {
    const session = await backend.load(simple, SINGLE_THREAD);
    const ints = (shape: number[]) => createTensor('INPUT0', 'INT32', shape, new Int32Array(shape.reduce((a, b) => a * b, 1)));
    const narrow = await rejection(session.run({ INPUT0: ints([1, 4]), INPUT1: ints([1, 4]) }));
    expect([narrow.code, narrow.statusCode]).toEqual(['SF_ERR_BACKEND_INPUT_REJECTED', 400]);
    expect(narrow.message).toContain('Got invalid dimensions for input: INPUT0 for the following indices');
    const flat = await rejection(session.run({ INPUT0: ints([16]), INPUT1: ints([16]) }));
    expect([flat.code, flat.statusCode]).toEqual(['SF_ERR_BACKEND_INPUT_REJECTED', 400]);
    expect(flat.message).toContain('Invalid rank for input');
    expect(flat.cause).toBeInstanceOf(Error);
    await session.dispose();
  });

  it('refuses BF16 inputs before they reach ONNX Runtime', async () => {
    const session = await backend.load(simple, SINGLE_THREAD);
    const err = await rejection(session.run({ INPUT0: createTensor('INPUT0', 'BF16', [1], [1]) }));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    await session.dispose();
  });

  it('refuses to run after dispose, and dispose twice is harmless', async () => {
    const session = await backend.load(simple, SINGLE_THREAD);
    await session.dispose();
    await session.dispose();
    const err = await rejection(session.run({}));
    expect(err.message).toBe(`Backend 'onnxruntime' failed to run '<${simple.byteLength}-byte ONNX model>': the session has been disposed.`);
  });

  it('reports models that do not load', async () => {
    const garbage = await rejection(backend.load(new Uint8Array([1, 2, 3]), SINGLE_THREAD));
    expect(garbage.code).toBe('SF_ERR_BACKEND_LOAD_FAILED');
    expect(garbage.message).toBe("Backend 'onnxruntime' could not load '<3-byte ONNX model>': Failed to load model because protobuf parsing failed.");
    const path = join(dir, 'missing.onnx');
    const missing = await rejection(backend.load(path, SINGLE_THREAD));
    expect(missing.code).toBe('SF_ERR_BACKEND_LOAD_FAILED');
    expect(missing.message.startsWith(`Backend 'onnxruntime' could not load '${path}': `)).toBe(true);
  });

  it.each([
    [{ intraOpNumThreads: -1 }, 'option intraOpNumThreads must be an integer >= 0 (0 lets ONNX Runtime choose), got -1.'],
    [{ interOpNumThreads: '2' }, 'option interOpNumThreads must be an integer >= 0 (0 lets ONNX Runtime choose), got "2".'],
    [{ graphOptimizationLevel: 'max' }, 'option graphOptimizationLevel must be one of disabled, basic, extended, layout, all, got "max".'],
    [{ enableCpuMemArena: 1 }, 'option enableCpuMemArena must be true or false, got 1.'],
    [{ executionProviders: 'cpu' }, "option executionProviders must be a list of provider names or { name, ... } objects, e.g. [{ name: 'cuda', deviceId: 0 }, 'cpu'], got \"cpu\"."],
    [{ allowSpinning: 'no' }, 'option allowSpinning must be true or false, got "no".'],
    [{ intraOpThreads: 1 }, 'unknown option intraOpThreads; ONNX Runtime options are intraOpNumThreads, interOpNumThreads, graphOptimizationLevel, enableCpuMemArena, executionProviders, allowSpinning.'],
  ])('refuses session option %j', async (options, problem) => {
    const err = await rejection(backend.load(simple, { options }));
    expect(err.code).toBe('SF_ERR_BACKEND_LOAD_FAILED');
    expect(err.message).toBe(`Backend 'onnxruntime' could not load '<${simple.byteLength}-byte ONNX model>': ${problem}`);
  });
});

/** A stand-in runtime that records the session options instead of loading anything. */
function fakeRuntime(supported: { name: string; bundled: boolean }[], inputMetadata: unknown[] = []) {
  const created: unknown[] = [];
  const session = { inputMetadata, outputMetadata: [], outputNames: [], release: async () => undefined };
  const runtime = {
    Tensor: ort.Tensor,
    listSupportedBackends: () => supported,
    InferenceSession: {
      create: async (_source: unknown, options: unknown) => {
        created.push(options);
        return session;
      },
    },
  } as unknown as OrtRuntime;
  return { runtime, created };
}

describe('OnnxBackend devices and execution providers', () => {
  const CPU = { name: 'cpu', bundled: true };

  it("allowSpinning reaches ONNX Runtime as its intra- and inter-op allow_spinning session config", async () => {
    const { runtime, created } = fakeRuntime([CPU]);
    await new OnnxBackend({ loadRuntime: async () => runtime }).load(new Uint8Array(1), { options: { intraOpNumThreads: 2, allowSpinning: false } });
    expect(created).toEqual([{ intraOpNumThreads: 2, extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } }, executionProviders: ['cpu'] }]);
  });

  it('maps gpu:N to the CUDA provider with deviceId N, falling back to CPU', async () => {
    const { runtime, created } = fakeRuntime([CPU, { name: 'cuda', bundled: true }]);
    await new OnnxBackend({ loadRuntime: async () => runtime }).load(new Uint8Array(1), {
      device: { kind: 'gpu', id: 1 },
      options: { intraOpNumThreads: 1 },
    });
    expect(created).toEqual([{ intraOpNumThreads: 1, executionProviders: [{ name: 'cuda', deviceId: 1 }, 'cpu'] }]);
  });

  it('uses the CPU provider by default and explicit providers as given', async () => {
    const { runtime, created } = fakeRuntime([CPU, { name: 'webgpu', bundled: true }]);
    const backend = new OnnxBackend({ loadRuntime: async () => runtime });
    await backend.load(new Uint8Array(1));
    await backend.load(new Uint8Array(1), { device: { kind: 'cpu', id: 0 }, options: { executionProviders: ['webgpu', { name: 'cpu' }] } });
    expect(created).toEqual([{ executionProviders: ['cpu'] }, { executionProviders: ['webgpu', { name: 'cpu' }] }]);
  });

  it('says when this onnxruntime-node has no CUDA provider', async () => {
    const { runtime } = fakeRuntime([CPU, { name: 'webgpu', bundled: true }]);
    const err = await rejection(new OnnxBackend({ loadRuntime: async () => runtime }).load(new Uint8Array(1), { device: { kind: 'gpu', id: 0 } }));
    expect(err.code).toBe('SF_ERR_BACKEND_UNAVAILABLE');
    expect(err.statusCode).toBe(501);
    expect(err.message).toBe("Backend 'onnxruntime' is not available: execution provider 'cuda' is not in this onnxruntime-node build (it has cpu, webgpu).");
  });

  it('says when the CUDA provider library was never downloaded', async () => {
    // This checkout's onnxruntime-node skipped its install script, so the CUDA library is absent.
    const { runtime } = fakeRuntime([CPU, { name: 'cuda', bundled: false }]);
    const err = await rejection(new OnnxBackend({ loadRuntime: async () => runtime }).load(new Uint8Array(1), { device: { kind: 'gpu', id: 0 } }));
    expect(err.code).toBe('SF_ERR_BACKEND_UNAVAILABLE');
    expect(err.message).toBe(
      "Backend 'onnxruntime' is not available: the 'cuda' execution provider library is not installed; onnxruntime-node's install script downloads it, which npm 11 runs only once approved: " +
        'run `npm install-scripts approve onnxruntime-node` (remove a `false` entry for it from allowScripts in package.json first; npm 10 needs no approval), ' +
        'then `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` (needs CUDA 12 and cuDNN 9).',
    );
  });

  it('refuses NPU devices', async () => {
    const { runtime } = fakeRuntime([CPU]);
    const err = await rejection(new OnnxBackend({ loadRuntime: async () => runtime }).load(new Uint8Array(1), { device: { kind: 'npu', id: 2 } }));
    expect(err.message).toBe("Backend 'onnxruntime' is not available: device npu:2 cannot run ONNX models here; serve NPU models with the Ascend backend.");
  });

  it('reports a runtime that cannot be loaded', async () => {
    const backend = new OnnxBackend({ loadRuntime: async () => { throw new Error('libonnxruntime.so.1: cannot open shared object file'); } });
    expect(await backend.available()).toBe('onnxruntime-node could not be loaded: libonnxruntime.so.1: cannot open shared object file');
    const err = await rejection(backend.load(new Uint8Array(1)));
    expect(err.code).toBe('SF_ERR_BACKEND_UNAVAILABLE');
    expect(err.message).toBe("Backend 'onnxruntime' is not available: onnxruntime-node could not be loaded: libonnxruntime.so.1: cannot open shared object file");
  });

  it('names the install step when onnxruntime-node, an optional peer dependency, is not installed', async () => {
    // The error Node gives a project without onnxruntime-node (a folder outside the checkout), reproduced here.
    const project = mkdtempSync(join(tmpdir(), 'serve-fn-no-ort-'));
    const script = "import('onnxruntime-node').catch((e) => process.stdout.write(JSON.stringify({ code: e.code, message: e.message })))";
    const shape = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' })) as { code: string; message: string };
    rmSync(project, { recursive: true, force: true });
    const loadRuntime = async (): Promise<OrtRuntime> => { throw Object.assign(new Error(shape.message), { code: shape.code }); };
    const backend = new OnnxBackend({ loadRuntime });
    const expected = 'onnxruntime-node is not installed; ONNX and text models need it, an optional peer dependency of serve-fn: ' +
      'run `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0` in your project (docs/install.md)';
    expect(await backend.available()).toBe(expected);
    const err = await rejection(backend.load(new Uint8Array(1)));
    expect(err.code).toBe('SF_ERR_BACKEND_UNAVAILABLE');
    expect(err.message).toBe(`Backend 'onnxruntime' is not available: ${expected}`);
    expect((err.cause as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND');
  });

  it('refuses models whose inputs are not tensors or have no KServe datatype', async () => {
    const load = (metadata: unknown) =>
      rejection(new OnnxBackend({ loadRuntime: async () => fakeRuntime([CPU], [metadata]).runtime }).load(new Uint8Array(7)));
    const sequence = await load({ name: 'seq', isTensor: false });
    expect(sequence.code).toBe('SF_ERR_BACKEND_LOAD_FAILED');
    expect(sequence.message).toBe(
      "Backend 'onnxruntime' could not load '<7-byte ONNX model>': 'seq' is not a tensor (a sequence, map or optional); serve-fn exchanges tensors only.",
    );
    const int4 = await load({ name: 'q', isTensor: true, type: 'int4', shape: [2] });
    expect(int4.message).toBe("Backend 'onnxruntime' could not load '<7-byte ONNX model>': Tensor 'q': ONNX Runtime type 'int4' has no KServe v2 datatype.");
  });
});
