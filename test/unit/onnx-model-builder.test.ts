import { afterEach, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import type { OnnxSession } from '../../src/backends/onnx/onnx-session.js';
import {
  buildAddSubModel,
  buildCastModel,
  buildIdentityModel,
  buildOnnxModel,
  onnxElementType,
} from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnError } from '../../src/errors/index.js';
import { numberToFp16Bits } from '../../src/tensor/half-float.js';
import { createTensor, type TensorValue } from '../../src/tensor/tensor-factory.js';
import type { Datatype, Tensor } from '../../src/spec/tensor.js';

const backend = new OnnxBackend();
const sessions: OnnxSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.dispose()));
});

async function load(model: Uint8Array): Promise<OnnxSession> {
  const session = await backend.load(model, { options: { intraOpNumThreads: 1, interOpNumThreads: 1 } });
  sessions.push(session);
  return session;
}

async function runOne(model: Uint8Array, inputs: Tensor[]): Promise<Tensor> {
  const outputs = await (await load(model)).run(Object.fromEntries(inputs.map((t) => [t.name, t])));
  return Object.values(outputs)[0]!;
}

describe('protobuf encoding', () => {
  it('writes the exact bytes of a minimal model', () => {
    const model = buildOnnxModel({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 2, 'n'] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [] }],
      nodes: [{ op: 'Identity', inputs: ['x'], outputs: ['y'], name: 'id' }],
      graphName: 'g',
    });
    const text = (s: string) => Buffer.from(s).toString('hex');
    const node = '0a0178' + '120179' + '1a02' + text('id') + '2208' + text('Identity'); // input, output, name, op_type
    const dims = '0a00' + '0a020802' + '0a0312016e'; // unknown, dim_value 2, dim_param "n"
    const inputInfo = '0a0178' + '1211' + '0a0f' + '0801' + '120b' + dims; // name, type.tensor_type{elem_type FLOAT, shape}
    const outputInfo = '0a0179' + '1206' + '0a04' + '0801' + '1200';
    const graph = '0a14' + node + '120167' + '5a16' + inputInfo + '620b' + outputInfo; // node, name, input, output
    const expected = '0808' + '1208' + text('serve-fn') + '3a3e' + graph + '4204' + '0a00' + '1011'; // ir 8, producer, graph, opset 17
    expect(Buffer.from(model).toString('hex')).toBe(expected);
  });

  it('refuses shape entries other than sizes, -1 and names', () => {
    const build = () => buildOnnxModel({ inputs: [{ name: 'x', datatype: 'FP32', shape: [-2] }], outputs: [], nodes: [] });
    expect(build).toThrow(ServeFnError);
    expect(build).toThrow("Tensor 'x': shape entries must be sizes >= 0, -1 or a symbolic name, got -2.");
  });

  it('uses the ONNX element type numbers', () => {
    expect([onnxElementType('FP32'), onnxElementType('INT64'), onnxElementType('BYTES'), onnxElementType('BF16')]).toEqual([1, 7, 8, 16]);
  });
});

describe('built models run in onnxruntime-node', () => {
  it("builds Triton's simple add/sub model", async () => {
    const session = await load(buildAddSubModel({ datatype: 'FP32', size: 4 }));
    expect(session.metadata().inputs.map((s) => s.shape)).toEqual([[-1, 4], [-1, 4]]);
    const outputs = await session.run({
      INPUT0: createTensor('INPUT0', 'FP32', [1, 4], [1, 2, 3, 4]),
      INPUT1: createTensor('INPUT1', 'FP32', [1, 4], [0.5, 0.5, 0.5, 0.5]),
    });
    expect(outputs.OUTPUT0!.data).toEqual(new Float32Array([1.5, 2.5, 3.5, 4.5]));
    expect(outputs.OUTPUT1!.data).toEqual(new Float32Array([0.5, 1.5, 2.5, 3.5]));
  });

  const IDENTITY: readonly [Datatype, TensorValue[]][] = [
    ['BOOL', [true, false]], ['UINT8', [0, 255]], ['UINT16', [1, 65535]], ['UINT32', [1, 4294967295]],
    ['UINT64', [0n, 2n ** 64n - 1n]], ['INT8', [-128, 127]], ['INT16', [-32768, 32767]], ['INT32', [-1, 2147483647]],
    ['INT64', [-(2n ** 63n), 2n ** 63n - 1n]], ['FP16', [1, 65504]], ['FP32', [0.5, -1]], ['FP64', [0.1, -2]],
    ['BYTES', ['', 'héllo 🙂']],
  ];

  it.each(IDENTITY)('passes %s through Identity unchanged', async (datatype, values) => {
    const input = createTensor('INPUT0', datatype, [2], values);
    const session = await load(buildIdentityModel(datatype));
    expect(session.metadata().outputs).toEqual([{ name: 'OUTPUT0', datatype, shape: [-1] }]);
    expect(await session.run({ INPUT0: input })).toEqual({ OUTPUT0: { ...input, name: 'OUTPUT0' } });
  });

  it('casts FP32 to INT32 by truncation', async () => {
    const output = await runOne(buildCastModel('FP32', 'INT32'), [createTensor('INPUT0', 'FP32', [3], [1.7, -2.2, 0])]);
    expect(output.data).toEqual(new Int32Array([1, -2, 0]));
  });

  it("rounds FP32 to FP16 exactly as ONNX Runtime's Cast does", async () => {
    const values = [0.1, 65519, 65520, 2 ** -25, 3 * 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2049, -0, 1e-8, 2 ** -24, 1 / 3];
    const output = await runOne(buildCastModel('FP32', 'FP16'), [createTensor('INPUT0', 'FP32', [values.length], values)]);
    expect(Array.from(output.data as Uint16Array)).toEqual(values.map((v) => numberToFp16Bits(Math.fround(v))));
  });

  it('refuses to load a model with BF16 values, which onnxruntime-node cannot hold', async () => {
    const model = buildCastModel('FP32', 'BF16');
    const err = await backend.load(model).then(() => undefined, (e: ServeFnError) => e);
    expect(err?.code).toBe('SF_ERR_BACKEND_LOAD_FAILED');
    expect(err?.message).toBe(`Backend 'onnxruntime' could not load '<${model.byteLength}-byte ONNX model>': Unsupported data type: 16`);
  });

  it('writes int, float, string, ints, floats, strings and tensor attributes', async () => {
    const x = createTensor('x', 'FP32', [1, 3], [-2, 4, -6]);
    const model = buildOnnxModel({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3] }],
      outputs: [
        { name: 'leaky', datatype: 'FP32', shape: [1, 3] },
        { name: 'joined', datatype: 'FP32', shape: [1, 6] },
        { name: 'transposed', datatype: 'FP32', shape: [3, 1] },
        { name: 'padded', datatype: 'FP32', shape: [1, 5] },
        { name: 'floats', datatype: 'FP32', shape: [2] },
        { name: 'strings', datatype: 'BYTES', shape: [2] },
        { name: 'tensor', datatype: 'INT64', shape: [2] },
      ],
      nodes: [
        { op: 'LeakyRelu', inputs: ['x'], outputs: ['leaky'], attributes: { alpha: { float: 0.5 } } },
        { op: 'Concat', inputs: ['x', 'leaky'], outputs: ['joined'], attributes: { axis: { int: -1 } } },
        { op: 'Transpose', inputs: ['x'], outputs: ['transposed'], attributes: { perm: { ints: [1, 0] } } },
        { op: 'Pad', inputs: ['x', 'pads'], outputs: ['padded'], attributes: { mode: { string: 'reflect' } } },
        { op: 'Constant', inputs: [], outputs: ['floats'], attributes: { value_floats: { floats: [0.25, -8] } } },
        { op: 'Constant', inputs: [], outputs: ['strings'], attributes: { value_strings: { strings: ['a', 'ü'] } } },
        { op: 'Constant', inputs: [], outputs: ['tensor'], attributes: { value: { tensor: { datatype: 'INT64', shape: [2], data: [-(2n ** 63n), 7n] } } } },
      ],
      initializers: [{ name: 'pads', datatype: 'INT64', shape: [4], data: [0, 1, 0, 1] }],
    });
    const outputs = await (await load(model)).run({ x });
    expect(outputs.leaky!.data).toEqual(new Float32Array([-1, 4, -3]));
    expect(outputs.joined!.data).toEqual(new Float32Array([-2, 4, -6, -1, 4, -3]));
    expect(outputs.transposed).toEqual({ name: 'transposed', datatype: 'FP32', shape: [3, 1], data: new Float32Array([-2, 4, -6]) });
    expect(outputs.padded!.data).toEqual(new Float32Array([4, -2, 4, -6, 4]));
    expect(outputs.floats!.data).toEqual(new Float32Array([0.25, -8]));
    expect(outputs.strings!.data).toEqual([new Uint8Array([0x61]), new Uint8Array([0xc3, 0xbc])]);
    expect(outputs.tensor!.data).toEqual(new BigInt64Array([-(2n ** 63n), 7n]));
  });
});
