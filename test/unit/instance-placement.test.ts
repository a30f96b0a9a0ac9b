import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_INSTANCES, instancePlacements, restartPolicyFromParameters, sessionOptionsFromParameters } from '../../src/model-repository/instance-placement.js';
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

  it('puts KIND_NPU groups on the NPUs their gpus list, whatever runs them (a model.ts too)', () => {
    expect(instancePlacements(config('instance_group [ { count: 1 kind: KIND_NPU gpus: [ 0, 2 ] } ]'), 'module')).toEqual([
      { name: 'm_0_0', kind: 'npu', id: 0 },
      { name: 'm_0_1', kind: 'npu', id: 2 },
    ]);
  });
});

describe('the ceiling on instances', () => {
  it(`refuses more than ${DEFAULT_MAX_INSTANCES} instances of a model version by default (16 asked), naming the flag`, () => {
    expect(() => instancePlacements(config('instance_group [ { count: 16 kind: KIND_CPU } ]'), 'onnx')).toThrow(expect.objectContaining({
      code: 'SF_ERR_CONFIG_INVALID',
      statusCode: 400,
      message: "Model configuration for 'm' is invalid: instance_group asks for 16 instances (16); this server runs at most 8 per model version (--max-instances, SERVE_FN_MAX_INSTANCES)",
    }));
  });

  it('counts instances on every device a group lists, and takes the ceiling the server sets', () => {
    const twoGpus = config('instance_group [ { count: 3 kind: KIND_GPU gpus: [ 0, 1 ] } ]');
    expect(() => instancePlacements(twoGpus, 'onnx', 5)).toThrow('instance_group asks for 6 instances (3 × 2 devices); this server runs at most 5');
    expect(instancePlacements(twoGpus, 'onnx', 6)).toHaveLength(6);
    expect(instancePlacements(config('instance_group [ { count: 8 kind: KIND_CPU } ]'), 'onnx')).toHaveLength(8);
  });
});

describe('instancePlacements for npu_ge', () => {
  const ge = (text: string) => config(`backend: "npu_ge"\n${text}`);
  const devices = (ids: string) => `parameters { key: "device_ids" value { string_value: "${ids}" } }`;
  const blocks = (key: string, n: number) => `parameters { key: "${key}" value { string_value: "${n}" } }`;

  it('puts one slot on NPU 0 by default, and honours a group\'s gpus without device_ids', () => {
    expect(instancePlacements(ge(''), 'npu_ge')).toEqual([{ name: 'm_0', kind: 'npu', id: 0, slots: 1 }]);
    expect(instancePlacements(ge('instance_group [ { count: 1 gpus: [ 1, 2 ] } ]'), 'npu_ge')).toEqual([
      { name: 'm_0_0', kind: 'npu', id: 1, slots: 1 }, { name: 'm_0_1', kind: 'npu', id: 2, slots: 1 },
    ]);
  });

  it('places instances round-robin on device_ids, each listed NPU getting one at least', () => {
    expect(instancePlacements(ge(`instance_group [ { count: 3 } ] ${devices('0,1')}`), 'npu_ge').map((p) => [p.name, p.id])).toEqual([['m_0_0', 0], ['m_0_1', 1], ['m_0_2', 0]]);
    // Huawei's example/resnet: count 1 on "4,5" runs on both NPUs.
    expect(instancePlacements(ge(`instance_group [ { count: 1 } ] ${devices('4,5')}`), 'npu_ge')).toEqual([
      { name: 'm_0_0', kind: 'npu', id: 4, slots: 1 }, { name: 'm_0_1', kind: 'npu', id: 5, slots: 1 },
    ]);
    expect(instancePlacements(ge(`instance_group [ { count: 2 gpus: [ 7 ] } ] ${devices('2')}`), 'npu_ge').map((p) => p.id)).toEqual([2, 2]);
  });

  it("gives each NPU the GE backend's exec blocks, shared by the instances on it", () => {
    const slots = (text: string) => instancePlacements(ge(text), 'npu_ge').map((p) => [p.id, p.slots]);
    // ceil(instances × instance_exec_blocks / NPUs) per NPU.
    expect(slots(`instance_group [ { count: 1 } ] ${blocks('instance_exec_blocks', 2)}`)).toEqual([[0, 2]]);
    expect(slots(`instance_group [ { count: 2 } ] ${blocks('instance_exec_blocks', 2)}`)).toEqual([[0, 2], [0, 2]]);
    expect(slots(`instance_group [ { count: 3 } ] ${devices('0,1')} ${blocks('instance_exec_blocks', 1)}`)).toEqual([[0, 1], [1, 2], [0, 1]]);
    // device_exec_blocks wins: 5 blocks per NPU, two instances on NPU 0 share them 3 + 2.
    expect(slots(`instance_group [ { count: 3 } ] parameters [ { key: "device_ids" value { string_value: "0,1" } }, { key: "device_exec_blocks" value { string_value: "5" } } ]`))
      .toEqual([[0, 3], [1, 5], [0, 2]]);
    // Never fewer than one slot per instance.
    expect(slots(`instance_group [ { count: 2 } ] ${blocks('device_exec_blocks', 1)}`)).toEqual([[0, 1], [0, 1]]);
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

describe('restartPolicyFromParameters', () => {
  const limit = (text: string) => config(`parameters { key: "restart_limit" value { string_value: "${text}" } }`);

  it("reads the model's restart_limit, and nothing without one", () => {
    expect(restartPolicyFromParameters(limit('2/30s'))).toEqual({ maxRestarts: 2, windowMs: 30_000 });
    expect(restartPolicyFromParameters(limit('0/10m'))).toEqual({ maxRestarts: 0, windowMs: 600_000 });
    expect(restartPolicyFromParameters(config(''))).toBeUndefined();
  });

  it.each(['5', 'five/60s', '5/0s', '5/60 days', '-1/60s'])('refuses %s', (text) => {
    expect(() => restartPolicyFromParameters(limit(text))).toThrow(expect.objectContaining({ code: 'SF_ERR_CONFIG_INVALID', message: expect.stringContaining(`parameter restart_limit must be '<restarts>/<window>'`) }));
  });
});
