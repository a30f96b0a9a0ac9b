import { describe, expect, it } from 'vitest';
import { configTensors } from '../../src/model-repository/config-tensors.js';
import { toTensorSpec } from '../../src/spec/config-tensor.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';

const config = (text: string) => parseModelConfig(text, 'config.pbtxt', 'm').config;

describe('configTensors', () => {
  it('maps config datatypes to KServe ones and keeps reshape and optional', () => {
    const tensors = configTensors(config(`
      input [ { name: "A" data_type: TYPE_STRING dims: [ -1 ] optional: true }, { name: "B" data_type: TYPE_FP16 dims: [ 2 ] reshape { shape: [ 1, 2 ] } } ]
      output [ { name: "C" data_type: TYPE_BOOL dims: [ 3 ] } ]`));
    expect(tensors.inputs).toEqual([
      { name: 'A', datatype: 'BYTES', dims: [-1], reshape: undefined, optional: true },
      { name: 'B', datatype: 'FP16', dims: [2], reshape: [1, 2], optional: false },
    ]);
    expect(tensors.outputs).toEqual([{ name: 'C', datatype: 'BOOL', dims: [3], reshape: undefined, optional: false }]);
    expect(tensors.inputs.map(toTensorSpec)).toEqual([
      { name: 'A', datatype: 'BYTES', shape: [-1], optional: true },
      { name: 'B', datatype: 'FP16', shape: [2] },
    ]);
  });

  it('refuses tensors without a datatype or name, and dims that are not sizes', () => {
    expect(() => configTensors(config('input [ { name: "A" dims: [ 1 ] } ]'))).toThrow("Model configuration for 'm' is invalid: input 'A' needs a data_type (got TYPE_INVALID)");
    expect(() => configTensors(config('output [ { data_type: TYPE_FP32 dims: [ 1 ] } ]'))).toThrow('an output has no name');
    expect(() => configTensors(config('input [ { name: "A" data_type: TYPE_FP32 dims: [ 0 ] } ]'))).toThrow("input 'A' has dims [0]; each must be a size >= 1 or -1");
  });
});
