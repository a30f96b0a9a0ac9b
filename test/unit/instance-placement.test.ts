import { describe, expect, it } from 'vitest';
import { instancePlacements, sessionOptionsFromParameters } from '../../src/model-repository/instance-placement.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';

const config = (text: string) => parseModelConfig(text, 'config.pbtxt', 'm').config;

describe('instancePlacements', () => {
  it('puts count instances on each listed device, CPU groups on the CPU', () => {
    const placements = instancePlacements(config('instance_group [ { count: 2 kind: KIND_GPU gpus: [ 0, 1 ] }, { name: "cpu" count: 1 kind: KIND_CPU } ]'), 'onnx');
    expect(placements).toEqual([
      { name: 'm_0_0', kind: 'gpu', id: 0 },
      { name: 'm_0_1', kind: 'gpu', id: 0 },
      { name: 'm_0_2', kind: 'gpu', id: 1 },
      { name: 'm_0_3', kind: 'gpu', id: 1 },
      { name: 'cpu_0', kind: 'cpu', id: 0 },
    ]);
  });

  it('runs one CPU instance by default, and npu_om models on NPUs', () => {
    expect(instancePlacements(config(''), 'module')).toEqual([{ name: 'm_0', kind: 'cpu', id: 0 }]);
    expect(instancePlacements(config('instance_group [ { count: 1 gpus: [ 3 ] } ]'), 'npu_om')).toEqual([{ name: 'm_0_0', kind: 'npu', id: 3 }]);
  });
});

describe('sessionOptionsFromParameters', () => {
  it("reads Triton's onnxruntime parameters, one intra-op thread by default", () => {
    expect(sessionOptionsFromParameters(config(''))).toEqual({ intraOpNumThreads: 1 });
    const text = `parameters [
      { key: "intra_op_thread_count" value { string_value: "4" } },
      { key: "inter_op_thread_count" value { string_value: "2" } },
      { key: "enable_mem_arena" value { string_value: "False" } } ]`;
    expect(sessionOptionsFromParameters(config(text))).toEqual({ intraOpNumThreads: 4, interOpNumThreads: 2, enableCpuMemArena: false });
  });

  it('refuses values that are not numbers or booleans', () => {
    expect(() => sessionOptionsFromParameters(config('parameters { key: "intra_op_thread_count" value { string_value: "many" } }'))).toThrow(
      "Model configuration for 'm' is invalid: parameter intra_op_thread_count must be a whole number, got 'many'",
    );
    expect(() => sessionOptionsFromParameters(config('parameters { key: "enable_mem_arena" value { string_value: "maybe" } }'))).toThrow('parameter enable_mem_arena must be true or false');
  });
});
