import { describe, expect, it } from 'vitest';
import {
  buildInferResponseBody,
  decodeInferInputs,
  encodeBinaryOutput,
  splitInferBody,
  tensorFromBytes,
  tensorToBytes,
} from '../../src/tensor/binary-codec.js';
import { createTensor, type TensorValue } from '../../src/tensor/tensor-factory.js';
import type { Datatype } from '../../src/spec/tensor.js';
import { thrown } from '../helpers/thrown.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

/** For each datatype: two elements and their little-endian wire bytes. */
const WIRE: readonly [Datatype, TensorValue[], string][] = [
  ['BOOL', [true, false], '0100'],
  ['UINT8', [1, 255], '01ff'],
  ['UINT16', [1, 0xabcd], '0100cdab'],
  ['UINT32', [1, 0xdeadbeef], '01000000efbeadde'],
  ['UINT64', [1n, 2n ** 64n - 1n], '0100000000000000ffffffffffffffff'],
  ['INT8', [-1, 127], 'ff7f'],
  ['INT16', [-2, 0x1234], 'feff3412'],
  ['INT32', [1, -2], '01000000feffffff'],
  ['INT64', [-(2n ** 63n), 2n ** 63n - 1n], '0000000000000080ffffffffffffff7f'],
  ['FP16', [1, -2], '003c00c0'],
  ['FP32', [1, -2], '0000803f000000c0'],
  ['FP64', [1, -2], '000000000000f03f00000000000000c0'],
  ['BF16', [1, -2], '803f00c0'],
  ['BYTES', ['', 'é日'], '00000000' + '05000000' + 'c3a9e697a5'],
];

describe('tensor ↔ wire bytes', () => {
  it.each(WIRE)('%s', (datatype, values, wire) => {
    const tensor = createTensor('T', datatype, [2], values);
    const bytes = tensorToBytes(tensor);
    expect(hex(bytes)).toBe(wire);
    expect(tensorFromBytes('T', datatype, [2], bytes)).toEqual(tensor);
  });

  it('covers every datatype', () => {
    expect(new Set(WIRE.map(([d]) => d)).size).toBe(14);
  });

  it('shares memory with numeric tensors in both directions', () => {
    const tensor = createTensor('x', 'FP32', [2], new Float32Array([1, 2]));
    const bytes = tensorToBytes(tensor);
    expect(bytes.buffer).toBe((tensor.data as Float32Array).buffer);
    const back = tensorFromBytes('x', 'FP32', [2], bytes);
    expect((back.data as Float32Array).buffer).toBe(bytes.buffer);
  });

  it.each([
    ['Uint8Array', new Uint8Array([9, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0])],
    ['Buffer', Buffer.from([9, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0])],
  ])('copies a misaligned %s slice to align it', (_, body) => {
    const slice = body.subarray(1);
    const tensor = tensorFromBytes('x', 'FP32', [2], slice);
    expect(tensor.data).toEqual(new Float32Array([1, -2]));
    expect((tensor.data as Float32Array).buffer).not.toBe(body.buffer);
  });

  it('keeps BYTES elements as views of the body', () => {
    const wire = Buffer.from('0200000068690000000001000000ff', 'hex');
    const tensor = tensorFromBytes('s', 'BYTES', [3], wire);
    expect((tensor.data as Uint8Array[]).map((e) => hex(e))).toEqual(['6869', '', 'ff']);
    expect((tensor.data as Uint8Array[])[0]!.buffer).toBe(wire.buffer);
  });

  it.each([
    ['FP32', [3], '0000803f000000c0', "Tensor 'T': binary data is 8 bytes, but shape [3] of FP32 needs 12."],
    ['BYTES', [1], '0300', "Tensor 'T': BYTES element 0 is cut off inside its 4-byte length prefix."],
    ['BYTES', [1], '050000006869', "Tensor 'T': BYTES element 0 declares 5 bytes, but only 2 remain."],
    ['BYTES', [1], '01000000410100000042', "Tensor 'T': binary data has 5 bytes left after the 1 elements of shape [1]."],
    ['BYTES', [3], '0100000041', "Tensor 'T': shape [3] needs 3 elements, got 1."],
    ['BOOL', [2], '0102', "Tensor 'T': element 1 is 2: BOOL elements must be 0 or 1."],
  ] as const)('refuses bad %s bytes for shape %j', (datatype, shape, wire, message) => {
    const err = thrown(() => tensorFromBytes('T', datatype, shape, Buffer.from(wire, 'hex')));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    expect(err.message).toBe(message);
  });
});

function requestBody(header: unknown, ...chunks: Uint8Array[]): { body: Buffer; headerLength: number } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...chunks]), headerLength: json.byteLength };
}

describe('request bodies', () => {
  const fp32 = Buffer.from(new Float32Array([1.5, -2, 3, 4]).buffer);
  const strings = Buffer.from('02000000' + '6869' + '00000000', 'hex');

  it('splits a body with several inputs, mixing JSON and binary data', () => {
    const header = {
      id: '7',
      inputs: [
        { name: 'A', shape: [2, 2], datatype: 'FP32', parameters: { binary_data_size: 16 } },
        { name: 'B', shape: [3], datatype: 'INT32', data: [1, 2, 3] },
        { name: 'C', shape: [2], datatype: 'BYTES', parameters: { binary_data_size: 10 } },
      ],
    };
    const { body, headerLength } = requestBody(header, fp32, strings);
    const parts = splitInferBody(body, String(headerLength));
    expect(parts.header).toEqual(header);
    expect(parts.binary.byteLength).toBe(26);
    const [a, b, c] = decodeInferInputs((parts.header as typeof header).inputs, parts.binary);
    expect(a).toEqual({ name: 'A', datatype: 'FP32', shape: [2, 2], data: new Float32Array([1.5, -2, 3, 4]) });
    expect(b).toEqual({ name: 'B', datatype: 'INT32', shape: [3], data: new Int32Array([1, 2, 3]) });
    expect(c).toEqual({ name: 'C', datatype: 'BYTES', shape: [2], data: [new Uint8Array([0x68, 0x69]), new Uint8Array([])] });
  });

  it('treats a header length of 0 as a raw binary request', () => {
    const body = Buffer.from([1, 2, 3]);
    expect(splitInferBody(body, 0)).toEqual({ header: undefined, binary: body });
  });

  it.each([
    ['abc', "Inference-Header-Content-Length must be a non-negative integer, got 'abc'."],
    ['-1', "Inference-Header-Content-Length must be a non-negative integer, got '-1'."],
    [1.5, "Inference-Header-Content-Length must be a non-negative integer, got '1.5'."],
    ['99', 'Inference-Header-Content-Length is 99, larger than the request body (10 bytes).'],
  ])('refuses header length %j', (length, message) => {
    const err = thrown(() => splitInferBody(Buffer.alloc(10), length));
    expect(err.code).toBe('SF_ERR_BAD_REQUEST');
    expect(err.message).toBe(message);
  });

  it('reports a JSON header that does not parse', () => {
    const err = thrown(() => splitInferBody(Buffer.from('{"inputs": [}xyz'), 13));
    expect(err.code).toBe('SF_ERR_BODY_INVALID_JSON');
    expect(err.message).toMatch(/^Request body is not valid JSON: /);
  });

  it('checks binary_data_size against the binary part', () => {
    const input = (size: unknown, extra: object = {}) => ({ name: 'A', shape: [4], datatype: 'FP32', parameters: { binary_data_size: size }, ...extra });
    const cases: [unknown[], Uint8Array, string, string][] = [
      [[input(16)], Buffer.alloc(20), 'SF_ERR_BAD_REQUEST',
        "The body has 20 bytes of binary data after the JSON header, but the inputs' binary_data_size parameters add up to 16."],
      [[input(16), input(16)], Buffer.alloc(20), 'SF_ERR_TENSOR_DATA', "Tensor 'A': binary_data_size is 16, but only 4 bytes of binary data remain."],
      [[input(-4)], Buffer.alloc(0), 'SF_ERR_TENSOR_DATA', "Tensor 'A': binary_data_size must be a non-negative integer, got -4."],
      [[input(16, { data: [1, 2, 3, 4] })], Buffer.alloc(16), 'SF_ERR_TENSOR_DATA', "Tensor 'A': has both \"data\" and binary_data_size; send the elements one way only."],
      [[input(12)], Buffer.alloc(12), 'SF_ERR_TENSOR_DATA', "Tensor 'A': binary data is 12 bytes, but shape [4] of FP32 needs 16."],
    ];
    for (const [inputs, binary, code, message] of cases) {
      const err = thrown(() => decodeInferInputs(inputs, binary));
      expect([err.code, err.message]).toEqual([code, message]);
    }
    expect(thrown(() => decodeInferInputs({}, Buffer.alloc(0))).message).toBe('"inputs" must be an array of tensors, got {}.');
  });
});

describe('response bodies', () => {
  it('writes the JSON header, then the binary outputs in header order', () => {
    const sum = createTensor('OUTPUT0', 'INT64', [2], [2n ** 63n - 1n, -1n]);
    const text = createTensor('OUTPUT1', 'BYTES', [1], ['ok']);
    const label = createTensor('OUTPUT2', 'FP32', [1], [0.5]);
    const binary0 = encodeBinaryOutput(sum);
    const binary1 = encodeBinaryOutput(text, { content_type: 'str' });
    const header = {
      model_name: 'simple',
      outputs: [binary0.header, { name: 'OUTPUT2', datatype: 'FP32', shape: [1], data: [0.5] }, binary1.header],
    };
    const { body, headerLength } = buildInferResponseBody(header, [binary0.bytes, binary1.bytes]);

    const json =
      '{"model_name":"simple","outputs":[' +
      '{"name":"OUTPUT0","datatype":"INT64","shape":[2],"parameters":{"binary_data_size":16}},' +
      '{"name":"OUTPUT2","datatype":"FP32","shape":[1],"data":[0.5]},' +
      '{"name":"OUTPUT1","datatype":"BYTES","shape":[1],"parameters":{"content_type":"str","binary_data_size":6}}]}';
    expect(headerLength).toBe(Buffer.byteLength(json));
    expect(body.subarray(0, headerLength).toString()).toBe(json);
    expect(hex(body.subarray(headerLength))).toBe('ffffffffffffff7f' + 'ffffffffffffffff' + '02000000' + '6f6b');

    // A client reading the response the way the server reads requests gets the tensors back.
    const parts = splitInferBody(body, headerLength);
    const outputs = decodeInferInputs((parts.header as typeof header).outputs, parts.binary);
    expect(outputs).toEqual([sum, label, text]);
  });
});
