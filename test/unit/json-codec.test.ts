import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import {
  decodeJsonTensor,
  decodeTensorHeader,
  encodeJsonTensor,
  jsonTensorByteBound,
  stringifyJson,
  tensorToJsonValues,
} from '../../src/tensor/json-codec.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Datatype } from '../../src/spec/tensor.js';
import { thrown } from '../helpers/thrown.js';

/** For each datatype: JSON data in, the stored elements, and the JSON values written back. */
const ROUND_TRIPS: readonly [Datatype, unknown[], unknown, unknown[]][] = [
  ['BOOL', [true, false, true, false], new Uint8Array([1, 0, 1, 0]), [true, false, true, false]],
  ['UINT8', [0, 1, 254, 255], new Uint8Array([0, 1, 254, 255]), [0, 1, 254, 255]],
  ['UINT16', [0, 1, 65534, 65535], new Uint16Array([0, 1, 65534, 65535]), [0, 1, 65534, 65535]],
  ['UINT32', [0, 1, 7, 4294967295], new Uint32Array([0, 1, 7, 4294967295]), [0, 1, 7, 4294967295]],
  ['UINT64', ['18446744073709551615', 0, 9007199254740991, '9007199254740993'],
    new BigUint64Array([2n ** 64n - 1n, 0n, 9007199254740991n, 9007199254740993n]),
    [2n ** 64n - 1n, 0n, 9007199254740991n, 9007199254740993n]],
  ['INT8', [-128, -1, 0, 127], new Int8Array([-128, -1, 0, 127]), [-128, -1, 0, 127]],
  ['INT16', [-32768, -1, 0, 32767], new Int16Array([-32768, -1, 0, 32767]), [-32768, -1, 0, 32767]],
  ['INT32', [-2147483648, -1, 0, 2147483647], new Int32Array([-2147483648, -1, 0, 2147483647]), [-2147483648, -1, 0, 2147483647]],
  ['INT64', ['-9223372036854775808', '9223372036854775807', -1, 42],
    new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n, -1n, 42n]),
    [-(2n ** 63n), 2n ** 63n - 1n, -1n, 42n]],
  ['FP16', [1, -2, 65504, 0.1], new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x2e66]), [1, -2, 65504, 0.0999755859375]],
  ['FP32', [1.5, -0.25, 3.4028234663852886e38, 0.1], new Float32Array([1.5, -0.25, 3.4028234663852886e38, 0.1]),
    [1.5, -0.25, 3.4028234663852886e38, 0.10000000149011612]],
  ['FP64', [0.1, -1e308, 5e-324, 2], new Float64Array([0.1, -1e308, 5e-324, 2]), [0.1, -1e308, 5e-324, 2]],
  ['BF16', [1, -2, 0.1, 3.3895313892515355e38], new Uint16Array([0x3f80, 0xc000, 0x3dcd, 0x7f7f]),
    [1, -2, 0.10009765625, 3.3895313892515355e38]],
  ['BYTES', ['', 'abc', 'héllo wörld', '日本語🙂'],
    ['', 'abc', 'héllo wörld', '日本語🙂'].map((s) => new TextEncoder().encode(s)),
    ['', 'abc', 'héllo wörld', '日本語🙂']],
];

describe('KServe v2 JSON round trips', () => {
  it.each(ROUND_TRIPS)('%s', (datatype, data, stored, written) => {
    const tensor = decodeJsonTensor({ name: 'T', shape: [2, 2], datatype, data });
    expect(tensor).toEqual({ name: 'T', datatype, shape: [2, 2], data: stored });
    expect(encodeJsonTensor(tensor)).toEqual({ name: 'T', datatype, shape: [2, 2], data: written });
  });

  it('covers every datatype', () => {
    expect(ROUND_TRIPS.map(([d]) => d).sort()).toEqual(
      ['BF16', 'BOOL', 'BYTES', 'FP16', 'FP32', 'FP64', 'INT16', 'INT32', 'INT64', 'INT8', 'UINT16', 'UINT32', 'UINT64', 'UINT8'],
    );
  });

  it('reads nested data in row-major order', () => {
    const tensor = decodeJsonTensor({ name: 'x', shape: [2, 2, 2], datatype: 'INT32', data: [[[1, 2], [3, 4]], [[5, 6], [7, 8]]] });
    expect(tensor.data).toEqual(new Int32Array([1, 2, 3, 4, 5, 6, 7, 8]));
    expect(decodeJsonTensor({ name: 'x', shape: [2, 2], datatype: 'BYTES', data: [['a', 'b'], ['c', 'd']] }).data).toHaveLength(4);
  });

  it('keeps input parameters and writes output parameters', () => {
    expect(decodeTensorHeader({ name: 'x', shape: [1], datatype: 'FP32', parameters: { content_type: 'str', n: 2, b: true } })).toEqual({
      name: 'x', datatype: 'FP32', shape: [1], parameters: { content_type: 'str', n: 2, b: true },
    });
    const tensor = createTensor('y', 'FP32', [1], [2]);
    expect(encodeJsonTensor(tensor, { note: 'ok' })).toEqual({ name: 'y', datatype: 'FP32', shape: [1], parameters: { note: 'ok' }, data: [2] });
  });

  it('writes FP16 overflow as Infinity, which JSON has no literal for', () => {
    const tensor = decodeJsonTensor({ name: 'h', shape: [2], datatype: 'FP16', data: [1e6, -65520] });
    expect(tensor.data).toEqual(new Uint16Array([0x7c00, 0xfc00]));
    expect(tensorToJsonValues(tensor)).toEqual([Infinity, -Infinity]);
  });
});

describe('JSON input errors', () => {
  it.each([
    [{ name: 'IN', shape: [2, 3], datatype: 'INT32', data: [1, 2, 3, 4, 5] }, 'SF_ERR_TENSOR_DATA', "Tensor 'IN': shape [2,3] needs 6 elements, got 5."],
    [{ name: 'IN', shape: [2], datatype: 'INT32', data: [[1, 2], [3, 4]] }, 'SF_ERR_TENSOR_DATA', "Tensor 'IN': shape [2] needs 2 elements, got 4."],
    [{ name: 'IN', shape: [2], datatype: 'BOOL', data: [1, 0] }, 'SF_ERR_TENSOR_DATA', "Tensor 'IN': element 0 is 1: expected true or false."],
    [{ name: 'IN', shape: [1], datatype: 'INT64', data: [9007199254740993] }, 'SF_ERR_TENSOR_DATA',
      "Tensor 'IN': element 0 is 9007199254740992: beyond ±(2^53-1), where JSON numbers lose precision; send it as a string."],
    [{ name: 'IN', shape: [1], datatype: 'UINT64', data: ['-1'] }, 'SF_ERR_TENSOR_DATA',
      "Tensor 'IN': element 0 is \"-1\": out of range for UINT64 [0, 18446744073709551615]."],
    [{ name: 'IN', shape: [1], datatype: 'BYTES', data: [42] }, 'SF_ERR_TENSOR_DATA', "Tensor 'IN': element 0 is 42: expected a string or bytes."],
    [{ name: 'IN', shape: [1], datatype: 'FLOAT', data: [1] }, 'SF_ERR_TENSOR_DATA',
      "Tensor 'IN': unknown datatype \"FLOAT\"; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BF16, BYTES."],
    [{ name: 'IN', shape: [-1], datatype: 'FP32', data: [1] }, 'SF_ERR_TENSOR_DATA', "Tensor 'IN': shape must be a list of non-negative integers, got [-1]."],
    [{ name: 'IN', shape: [1], datatype: 'FP32' }, 'SF_ERR_TENSOR_DATA',
      "Tensor 'IN': expected \"data\" as an array of elements, got no \"data\" and no binary_data_size parameter."],
    [{ name: 'IN', shape: [1], datatype: 'FP32', data: 'abc' }, 'SF_ERR_TENSOR_DATA', "Tensor 'IN': expected \"data\" as an array of elements, got \"data\" \"abc\"."],
    [{ name: 'IN', shape: [1], datatype: 'FP32', data: [1], parameters: { nested: { a: 1 } } }, 'SF_ERR_TENSOR_DATA',
      "Tensor 'IN': parameters must be an object of string, number or boolean values, got {\"nested\":{\"a\":1}}."],
    [{ shape: [1], datatype: 'FP32', data: [1] }, 'SF_ERR_BAD_REQUEST', 'Each input needs a non-empty "name" string; got none.'],
    [[1, 2], 'SF_ERR_BAD_REQUEST', 'Each input must be an object with name, shape, datatype and data; got [1,2].'],
  ])('%j', (input, code, message) => {
    const err = thrown(() => decodeJsonTensor(input));
    expect(err).toBeInstanceOf(ServeFnError);
    expect(err.code).toBe(code);
    expect(err.statusCode).toBe(400);
    expect(err.message).toBe(message);
  });

  it('refuses to write BYTES output that is not UTF-8', () => {
    const tensor = createTensor('OUT', 'BYTES', [2], ['ok', new Uint8Array([0xff, 0xfe])]);
    const err = thrown(() => encodeJsonTensor(tensor));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    expect(err.message).toBe("Tensor 'OUT': element 1 is not valid UTF-8, so it cannot be sent as JSON; request this output with \"binary_data\": true.");
  });
});

describe('stringifyJson', () => {
  it('writes INT64 and UINT64 extremes as exact integer literals', () => {
    const outputs = [
      encodeJsonTensor(createTensor('i', 'INT64', [2], [-(2n ** 63n), 2n ** 63n - 1n])),
      encodeJsonTensor(createTensor('u', 'UINT64', [1], [2n ** 64n - 1n])),
    ];
    expect(stringifyJson({ model_name: 'm', outputs })).toBe(
      '{"model_name":"m","outputs":[' +
        '{"name":"i","datatype":"INT64","shape":[2],"data":[-9223372036854775808,9223372036854775807]},' +
        '{"name":"u","datatype":"UINT64","shape":[1],"data":[18446744073709551615]}]}',
    );
  });

  it('matches JSON.stringify on values without bigints', () => {
    const value = {
      s: 'quote " backslash \\ newline \n ü',
      n: [1, -0.5, NaN, Infinity],
      nested: [{ a: null, skip: undefined, f: () => 1 }, [true, undefined]],
      date: new Date(0),
      empty: {},
    };
    expect(stringifyJson(value)).toBe(JSON.stringify(value));
    expect(stringifyJson([{ x: 1n }, undefined, 'a'])).toBe('[{"x":1},null,"a"]');
    expect(stringifyJson(12345678901234567890n)).toBe('12345678901234567890');
    expect(stringifyJson(undefined)).toBe('null');
  });
});

describe('jsonTensorByteBound', () => {
  const widest: [Datatype, unknown[]][] = [
    ['BOOL', [false, true]],
    ['INT8', [-128, 127]],
    ['UINT8', [255, 0]],
    ['INT16', [-32768, 32767]],
    ['UINT16', [65535, 0]],
    ['INT32', [-2147483648, 2147483647]],
    ['UINT32', [4294967295, 0]],
    ['INT64', [-9223372036854775808n, 9223372036854775807n]],
    ['UINT64', [18446744073709551615n, 0n]],
    ['FP16', [-6.1e-5, -65504]],
    ['BF16', [-1.1754943508222875e-38, -3.3895313892515355e38]],
    ['FP32', [-1.1754943508222875e-38, -1.401298464324817e-45]],
    ['FP64', [-2.2250738585072014e-308, -5e-324]],
  ];
  for (const [datatype, values] of widest) {
    it(`bounds ${datatype} at its widest elements`, () => {
      const tensor = createTensor('a_long_output_name', datatype, [2, 1], values as never);
      expect(Buffer.byteLength(stringifyJson(encodeJsonTensor(tensor)))).toBeLessThanOrEqual(jsonTensorByteBound(tensor));
    });
  }

  it('bounds BYTES by the escaped size of each element, and costs nothing but the element count for the others', () => {
    const control = new Uint8Array(100).fill(1);
    const tensor = createTensor('b', 'BYTES', [2], [control, new TextEncoder().encode('"\\')]);
    expect(Buffer.byteLength(stringifyJson(encodeJsonTensor(tensor)))).toBeLessThanOrEqual(jsonTensorByteBound(tensor));
    const huge = { name: 'x', datatype: 'FP32' as const, shape: [1024, 1024, 1024], data: new Float32Array(0) };
    expect(jsonTensorByteBound(huge)).toBeGreaterThan(25 * 1024 ** 3);
  });
});
