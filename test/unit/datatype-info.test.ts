import { describe, expect, it } from 'vitest';
import {
  DATATYPE_INFO,
  fromConfigDatatype,
  fromOrtType,
  isBigIntDatatype,
  isDatatype,
  parseDatatype,
  toConfigDatatype,
  toOrtType,
} from '../../src/tensor/datatype-info.js';
import { DATATYPES } from '../../src/spec/tensor.js';
import { thrown } from '../helpers/thrown.js';

describe('DATATYPE_INFO', () => {
  it.each([
    ['BOOL', 1, Uint8Array, 'bool', 'TYPE_BOOL'],
    ['UINT8', 1, Uint8Array, 'uint8', 'TYPE_UINT8'],
    ['UINT16', 2, Uint16Array, 'uint16', 'TYPE_UINT16'],
    ['UINT32', 4, Uint32Array, 'uint32', 'TYPE_UINT32'],
    ['UINT64', 8, BigUint64Array, 'uint64', 'TYPE_UINT64'],
    ['INT8', 1, Int8Array, 'int8', 'TYPE_INT8'],
    ['INT16', 2, Int16Array, 'int16', 'TYPE_INT16'],
    ['INT32', 4, Int32Array, 'int32', 'TYPE_INT32'],
    ['INT64', 8, BigInt64Array, 'int64', 'TYPE_INT64'],
    ['FP16', 2, Uint16Array, 'float16', 'TYPE_FP16'],
    ['FP32', 4, Float32Array, 'float32', 'TYPE_FP32'],
    ['FP64', 8, Float64Array, 'float64', 'TYPE_FP64'],
    ['BF16', 2, Uint16Array, undefined, 'TYPE_BF16'],
    ['BYTES', undefined, undefined, 'string', 'TYPE_STRING'],
  ] as const)('%s: %s bytes, %o, ORT %s, config %s', (datatype, byteSize, arrayType, ortType, configName) => {
    expect(DATATYPE_INFO[datatype]).toEqual({ datatype, byteSize, arrayType, ortType, configName });
  });

  it('covers every datatype', () => {
    expect(Object.keys(DATATYPE_INFO).sort()).toEqual([...DATATYPES].sort());
  });

  it('marks only INT64 and UINT64 as bigint datatypes', () => {
    expect(DATATYPES.filter(isBigIntDatatype)).toEqual(['UINT64', 'INT64']);
  });
});

describe('parseDatatype', () => {
  it('accepts every exact datatype name', () => {
    for (const d of DATATYPES) expect(parseDatatype(d, 'x')).toBe(d);
    expect(isDatatype('FP32')).toBe(true);
    expect(isDatatype('fp32')).toBe(false);
  });

  it('refuses other spellings with the tensor named', () => {
    const err = thrown(() => parseDatatype('fp32', 'INPUT0'));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    expect(err.statusCode).toBe(400);
    expect(err.message).toBe(
      "Tensor 'INPUT0': unknown datatype \"fp32\"; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BF16, BYTES.",
    );
    expect(thrown(() => parseDatatype(undefined, 'x')).message).toMatch(/^Tensor 'x': unknown datatype undefined;/);
    expect(thrown(() => parseDatatype('TYPE_FP32', 'x')).code).toBe('SF_ERR_TENSOR_DATA');
  });
});

describe('ONNX Runtime names', () => {
  it('maps every datatype except BF16 both ways', () => {
    for (const d of DATATYPES.filter((d) => d !== 'BF16')) expect(fromOrtType(toOrtType(d, 'x'), 'x')).toBe(d);
  });

  it('refuses BF16, which onnxruntime-node cannot feed', () => {
    const err = thrown(() => toOrtType('BF16', 'hidden'));
    expect(err.code).toBe('SF_ERR_TENSOR_DATA');
    expect(err.message).toBe(
      "Tensor 'hidden': datatype BF16 is not supported by ONNX Runtime for Node.js (it has no bfloat16 tensors); convert it to FP32 or FP16.",
    );
  });

  it('refuses ORT types with no KServe datatype', () => {
    expect(thrown(() => fromOrtType('int4', 'w')).message).toBe("Tensor 'w': ONNX Runtime type 'int4' has no KServe v2 datatype.");
  });
});

describe('Triton config names', () => {
  it('maps every datatype both ways', () => {
    for (const d of DATATYPES) expect(fromConfigDatatype(toConfigDatatype(d))).toBe(d);
    expect(toConfigDatatype('BYTES')).toBe('TYPE_STRING');
    expect(fromConfigDatatype('TYPE_STRING')).toBe('BYTES');
  });

  it('returns undefined for names Triton does not define', () => {
    expect(fromConfigDatatype('TYPE_BYTES')).toBeUndefined();
    expect(fromConfigDatatype('TYPE_INVALID')).toBeUndefined();
    expect(fromConfigDatatype('FP32')).toBeUndefined();
  });
});
