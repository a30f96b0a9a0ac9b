import { describe, expect, it } from 'vitest';
import { parseModelConfigJson } from '../../src/model-repository/config-json.js';
import { modelConfigToJson, parseModelConfig } from '../../src/model-repository/model-config.js';

const PBTXT = `
name: "m"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy { specific { versions: [1, 3] } }
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1, 16 ] reshape { shape: [ 16 ] } } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
dynamic_batching {
  max_queue_delay_microseconds: 100
  priority_levels: 2
  priority_queue_policy { key: 1 value { timeout_action: DELAY max_queue_size: 4 } }
}
parameters { key: "intra_op_thread_count" value { string_value: "2" } }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [ 16 ] zero_data: true } } } ]
`;

describe('parseModelConfigJson', () => {
  it('reads back the JSON Triton serves for a config as the same config', () => {
    const fromText = parseModelConfig(PBTXT, 'config.pbtxt', 'm').config;
    const json = JSON.stringify(modelConfigToJson(fromText));
    expect(parseModelConfigJson(json, 'm').config).toEqual(fromText);
  });

  it('takes protobuf JSON spellings: 64-bit integers as strings, enums by name', () => {
    const json = '{"name":"m","max_batch_size":4,"input":[{"name":"IN","data_type":"TYPE_INT64","dims":["-1","3"]}],"ensemble_scheduling":{"step":[{"model_name":"a","model_version":"-1","input_map":{"x":"IN"},"output_map":{"y":"OUT"}}]}}';
    const { config } = parseModelConfigJson(json, 'm');
    expect(config.input[0]).toMatchObject({ name: 'IN', data_type: 'TYPE_INT64', dims: [-1, 3] });
    expect(config.ensemble_scheduling?.step[0]).toEqual({ model_name: 'a', model_version: -1, input_map: { x: 'IN' }, output_map: { y: 'OUT' } });
  });

  it('refuses a config nested deeper than the JSON limit with 400 SF_ERR_BODY_TOO_DEEP instead of overflowing the stack', () => {
    const deep = `{"parameters":{"p":{"string_value":${'['.repeat(10_000)}${']'.repeat(10_000)}}}}`;
    expect(() => parseModelConfigJson(deep, 'm')).toThrow(expect.objectContaining({ code: 'SF_ERR_BODY_TOO_DEEP', statusCode: 400 }));
    const deepObject = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    expect(() => parseModelConfigJson(deepObject, 'm')).toThrow(expect.objectContaining({ code: 'SF_ERR_BODY_TOO_DEEP', statusCode: 400 }));
  });

  it("refuses a negative max_batch_size in a load request's config with 400", () => {
    expect(() => parseModelConfigJson('{"max_batch_size": -1}', 'm')).toThrow(expect.objectContaining({
      code: 'SF_ERR_CONFIG_PARSE', statusCode: 400, message: "config parameter of 'm':1:1: field 'max_batch_size' must be 0 or more, got -1",
    }));
  });

  it('names the model in its errors', () => {
    expect(() => parseModelConfigJson('{"name":', 'm')).toThrow(expect.objectContaining({ code: 'SF_ERR_CONFIG_INVALID', message: expect.stringMatching(/^Model configuration for 'm' is invalid: the config parameter is not valid JSON/) }));
    expect(() => parseModelConfigJson('[1]', 'm')).toThrow("Model configuration for 'm' is invalid: the config parameter must be a JSON object");
    expect(() => parseModelConfigJson('{"max_batch_size":"eight"}', 'm')).toThrow(expect.objectContaining({ code: 'SF_ERR_CONFIG_PARSE', message: "config parameter of 'm':1:1: field 'max_batch_size' expects an integer (int32), found string \"eight\"" }));
    expect(() => parseModelConfigJson('{"parameters":[1]}', 'm')).toThrow("Model configuration for 'm' is invalid: 'parameters' must be a JSON object");
  });
});
