import { describe, expect, it } from 'vitest';
import { checkGeParameters, geDeviceIds, geExecBlocks, geLoadOptions } from '../../src/model-repository/ge-parameters.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';

const config = (text: string) => parseModelConfig(`backend: "npu_ge"\n${text}`, 'config.pbtxt', 'm').config;
const parameters = (entries: Record<string, string>) =>
  `parameters [ ${Object.entries(entries).map(([key, value]) => `{ key: "${key}" value { string_value: "${value}" } }`).join(', ')} ]`;

describe('geDeviceIds', () => {
  it('reads "2" and "0,1" (spaces and repeats tolerated), undefined when absent', () => {
    expect(geDeviceIds(config(parameters({ device_ids: '2' })))).toEqual([2]);
    expect(geDeviceIds(config(parameters({ device_ids: '0, 1,1' })))).toEqual([0, 1]);
    expect(geDeviceIds(config(''))).toBeUndefined();
  });

  it('refuses anything but NPU ids', () => {
    for (const bad of ['', 'a', '-1', '0;1']) {
      expect(() => geDeviceIds(config(parameters({ device_ids: bad })))).toThrow(`parameter device_ids must list NPU ids such as "0" or "0,1", got '${bad}'`);
    }
  });
});

describe('checkGeParameters', () => {
  it('accepts whole exec block counts and refuses others', () => {
    expect(geExecBlocks(config(parameters({ instance_exec_blocks: '2', device_exec_blocks: '3' })))).toEqual({ instance: 2, device: 3 });
    expect(() => checkGeParameters(config(parameters({ instance_exec_blocks: '0' })))).toThrow("parameter instance_exec_blocks must be a whole number >= 1, got '0'");
    expect(() => checkGeParameters(config(parameters({ device_exec_blocks: 'two' })))).toThrow("parameter device_exec_blocks must be a whole number >= 1, got 'two'");
  });

  it('refuses static_model "1" with dynamic_batching, as the GE backend does', () => {
    expect(() => checkGeParameters(config(`max_batch_size: 8 dynamic_batching { } ${parameters({ static_model: '1' })}`))).toThrow(
      'parameter static_model "1" compiles a fixed-shape graph and cannot be combined with dynamic_batching',
    );
    expect(() => checkGeParameters(config(`max_batch_size: 8 dynamic_batching { } ${parameters({ static_model: '0' })}`))).not.toThrow();
    expect(() => checkGeParameters(config(`max_batch_size: 8 ${parameters({ static_model: '1' })}`))).not.toThrow();
  });
});

describe('geLoadOptions', () => {
  it('passes the GE scopes and precision_mode_v2 through and ignores parameters it does not know', () => {
    const options = geLoadOptions(config(parameters({
      'ge.aicoreNum': '12|10', 'session.ge.exec.dynamicGraphExecuteMode': 'dynamic_execute', 'graph.ge.inputShape': 'x:-1,3',
      'global.ge.exec.x': 'y', precision_mode_v2: 'fp16', device_ids: '0', profiling: 'dynamic', dump_graph: '1', unrelated: 'z',
    })));
    expect(options).toEqual({
      'ge.aicoreNum': '12|10', 'session.ge.exec.dynamicGraphExecuteMode': 'dynamic_execute', 'graph.ge.inputShape': 'x:-1,3',
      'global.ge.exec.x': 'y', 'session.ge.exec.precision_mode_v2': 'fp16',
    });
  });

  it('compiles static_model graphs for batch 1 when the model batches, for the configured dims otherwise (StaticModeConfig(One))', () => {
    const inputs = 'input [ { name: "a" data_type: TYPE_FP32 dims: [ 3, 4 ] }, { name: "b" data_type: TYPE_FP32 dims: [ 2 ] reshape { shape: [ 1, 2 ] } } ]';
    const output = 'output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]';
    expect(geLoadOptions(config(`max_batch_size: 8 ${inputs} ${output} ${parameters({ static_model: '1' })}`))).toEqual({ input_shape: 'a:1,3,4;b:1,1,2' });
    expect(geLoadOptions(config(`max_batch_size: 0 ${inputs} ${output} ${parameters({ static_model: '1' })}`))).toEqual({ input_shape: 'a:3,4;b:1,2' });
  });

  it('refuses static_model for variable dims', () => {
    const text = `input [ { name: "a" data_type: TYPE_FP32 dims: [ -1, 4 ] } ] output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ] ${parameters({ static_model: '1' })}`;
    expect(() => geLoadOptions(config(text))).toThrow("parameter static_model \"1\" needs fixed dims, but input 'a' has dims [-1, 4]");
  });
});
