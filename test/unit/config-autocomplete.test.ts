import { describe, expect, it } from 'vitest';
import type { BackendMetadata } from '../../src/backends/backend.js';
import { autoCompleteConfig, checkConfigAgainstModel, needsAutoComplete } from '../../src/model-repository/config-autocomplete.js';
import { DEFAULT_MAX_BATCH_SIZE } from '../../src/spec/batch-policy.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';

const config = (text: string) => parseModelConfig(text, 'config.pbtxt', 'm').config;
const batchable: BackendMetadata = {
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] }],
  outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [-1, 16] }, { name: 'SCORE', datatype: 'FP32', shape: [-1] }],
};
const fixed: BackendMetadata = {
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }],
  outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [] }],
};

describe('autoCompleteConfig', () => {
  it('turns on batching with max 4 and dynamic batching when every first dimension is variable', () => {
    const done = autoCompleteConfig(config(''), batchable, 'model.onnx');
    expect(DEFAULT_MAX_BATCH_SIZE).toBe(4);
    expect(done.max_batch_size).toBe(4);
    expect(done.dynamic_batching).toEqual({
      preferred_batch_size: [4], max_queue_delay_microseconds: 0, preserve_ordering: false, priority_levels: 0, default_priority_level: 0, priority_queue_policy: {},
    });
    expect(done.input).toEqual([{ name: 'INPUT0', data_type: 'TYPE_INT32', format: 'FORMAT_NONE', dims: [16], is_shape_tensor: false, allow_ragged_batch: false, optional: false }]);
    expect(done.output.map((o) => [o.name, o.data_type, o.dims, o.reshape])).toEqual([
      ['OUTPUT0', 'TYPE_FP32', [16], undefined],
      ['SCORE', 'TYPE_FP32', [1], { shape: [] }],
    ]);
  });

  it("takes a model's largest batch gear (an .om's dynamic batch) for max_batch_size, as Triton's TensorRT backend takes its engine's", () => {
    expect(autoCompleteConfig(config(''), { ...batchable, batchSizes: [1, 2, 16] }, 'model.om').max_batch_size).toBe(16);
  });

  it('keeps a configured max_batch_size and scheduler', () => {
    const done = autoCompleteConfig(config('max_batch_size: 16\ndynamic_batching { max_queue_delay_microseconds: 50 }'), batchable, 'model.onnx');
    expect(done.max_batch_size).toBe(16);
    expect(done.dynamic_batching?.max_queue_delay_microseconds).toBe(50);
  });

  it('leaves a model that cannot batch unbatched, dims as in the file', () => {
    const done = autoCompleteConfig(config(''), fixed, 'model.onnx');
    expect(done.max_batch_size).toBe(0);
    expect(done.dynamic_batching).toBeUndefined();
    expect(done.input[0].dims).toEqual([1, 16]);
    expect(done.output[0]).toMatchObject({ dims: [1] });
    expect(done.output[0].reshape).toBeUndefined();
  });

  it('refuses max_batch_size on a model that cannot batch', () => {
    expect(() => autoCompleteConfig(config('max_batch_size: 2'), fixed, '/r/m/1/model.onnx')).toThrow(
      "Model configuration for 'm' is invalid: autofill failed: model does not support batching while non-zero max_batch_size is specified (/r/m/1/model.onnx needs a variable first dimension on every input and output)",
    );
  });

  it('fills only the missing list and does nothing when both are given', () => {
    const partial = config('input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]');
    const done = autoCompleteConfig(partial, batchable, 'model.onnx');
    expect(done.input).toBe(partial.input);
    expect(done.output).toHaveLength(2);
    const full = config('input [ { name: "A" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "B" data_type: TYPE_INT32 dims: [ 1 ] } ]');
    expect(needsAutoComplete(full)).toBe(false);
    expect(autoCompleteConfig(full, batchable, 'model.onnx')).toBe(full);
  });
});

describe('checkConfigAgainstModel', () => {
  const simple = 'max_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]';

  it('accepts a configuration that matches the file, batch dimension included', () => {
    expect(() => checkConfigAgainstModel(config(simple), batchable, 'model.onnx')).not.toThrow();
  });

  it.each([
    [simple.replace('"INPUT0"', '"IN"'), "input 'IN' is not an input of model.onnx (it has INPUT0)"],
    [simple.replace('TYPE_INT32', 'TYPE_FP32'), "input 'INPUT0' is TYPE_FP32 in the configuration but TYPE_INT32 in model.onnx"],
    [simple.replace('dims: [ 16 ] } ]\noutput', 'dims: [ 8 ] } ]\noutput'), "input 'INPUT0' has shape [-1,8] in the configuration, batch dimension included, but [-1,16] in model.onnx"],
    [simple.replace('max_batch_size: 8', ''), "input 'INPUT0' has shape [16] in the configuration, but [-1,16] in model.onnx"],
    [simple.replace('"OUTPUT0"', '"OUT"'), "output 'OUT' is not an output of model.onnx (it has OUTPUT0, SCORE)"],
  ])('names the mismatch', (text, why) => {
    expect(() => checkConfigAgainstModel(config(text), batchable, 'model.onnx')).toThrow(`Model configuration for 'm' is invalid: ${why}`);
  });

  it('uses reshape as the shape the model sees, and wants every model input declared', () => {
    const reshaped = config('input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] reshape { shape: [ 1, 16 ] } } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 1 ] } ]');
    expect(() => checkConfigAgainstModel(reshaped, fixed, 'model.onnx')).toThrow("output 'OUTPUT0' has shape [1] in the configuration, but [] in model.onnx");
    const noInputs = config('output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]\nmax_batch_size: 2');
    expect(() => checkConfigAgainstModel(noInputs, batchable, 'model.onnx')).toThrow("model.onnx needs input 'INPUT0', which the configuration does not declare");
  });
});
