import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import {
  buildModelConfig,
  modelConfigToJson,
  parseModelConfig,
  type BuiltModelConfig,
  type ConfigDataType,
  type ModelConfig,
  type ModelInput,
  type ModelOutput,
  type SequenceControlInput,
} from '../../src/model-repository/model-config.js';
import { parsePbtxt } from '../../src/model-repository/pbtxt-parser.js';

/*
 * Fixtures are Triton's own configs, copied as data: server docs/examples/model_repository
 * (simple, simple_string, simple_sequence, simple_dyna_sequence, densenet_onnx), server qa/
 * L0_config_json (simple_ensemble, max_priority_level) and qa/L0_warmup (warmup_decoupled),
 * python_backend examples (add_sub, repeat_int32, instance_kind, ensemble_python_resnet50).
 * dynamic_batching_priority and warmup are written from the syntax in Triton's docs and tests.
 */
const FIXTURES = new URL('../fixtures/pbtxt/', import.meta.url);

function load(name: string): BuiltModelConfig {
  return parseModelConfig(readFileSync(new URL(`${name}.pbtxt`, FIXTURES), 'utf8'), `${name}.pbtxt`);
}

function build(source: string, modelName?: string): BuiltModelConfig {
  return parseModelConfig(source, 'config.pbtxt', modelName);
}

function configError(source: string): ServeFnError {
  try {
    build(source);
  } catch (err) {
    return err as ServeFnError;
  }
  throw new Error('expected a configuration error');
}

function input(name: string, data_type: ConfigDataType, dims: number[], extra: Partial<ModelInput> = {}): ModelInput {
  return { name, data_type, format: 'FORMAT_NONE', dims, is_shape_tensor: false, allow_ragged_batch: false, optional: false, ...extra };
}

function output(name: string, data_type: ConfigDataType, dims: number[], extra: Partial<ModelOutput> = {}): ModelOutput {
  return { name, data_type, dims, label_filename: '', is_shape_tensor: false, ...extra };
}

function control(name: string, kind: SequenceControlInput['control'][0]['kind']): SequenceControlInput {
  return { name, control: [{ kind, int32_false_true: [0, 1], fp32_false_true: [], data_type: 'TYPE_INVALID', bool_false_true: [] }] };
}

const LATEST_ONE = { latest: { num_versions: 1 } };

describe('buildModelConfig on Triton example configs', () => {
  it('simple: inputs, outputs and every default', () => {
    expect(load('simple')).toStrictEqual({
      config: {
        name: 'simple',
        platform: 'onnxruntime_onnx',
        version_policy: LATEST_ONE,
        max_batch_size: 8,
        input: [input('INPUT0', 'TYPE_INT32', [16]), input('INPUT1', 'TYPE_INT32', [16])],
        output: [output('OUTPUT0', 'TYPE_INT32', [16]), output('OUTPUT1', 'TYPE_INT32', [16])],
        instance_group: [{ name: 'simple', count: 1, gpus: [], kind: 'KIND_AUTO' }],
        default_model_filename: '',
        parameters: {},
        model_warmup: [],
        backend: '',
      },
      warnings: [],
    });
  });

  it('simple_string: TYPE_STRING tensors', () => {
    const { config } = load('simple_string');
    expect(config.input).toStrictEqual([input('INPUT0', 'TYPE_STRING', [16]), input('INPUT1', 'TYPE_STRING', [16])]);
    expect(config.output).toStrictEqual([output('OUTPUT0', 'TYPE_STRING', [16]), output('OUTPUT1', 'TYPE_STRING', [16])]);
  });

  it('simple_sequence: control inputs, idle default and two CPU instances for onnxruntime', () => {
    const { config, warnings } = load('simple_sequence');
    expect(warnings).toEqual([]);
    expect(config.sequence_batching).toStrictEqual({
      max_sequence_idle_microseconds: 1_000_000,
      control_input: [control('START', 'CONTROL_SEQUENCE_START'), control('READY', 'CONTROL_SEQUENCE_READY')],
      state: [],
      iterative_sequence: false,
    });
    expect(config.instance_group).toStrictEqual([{ name: 'simple_sequence_0', count: 2, gpus: [], kind: 'KIND_CPU' }]);
    expect(config.dynamic_batching).toBeUndefined();
  });

  it('simple_dyna_sequence: oldest strategy, CORRID control and parameters', () => {
    expect(load('simple_dyna_sequence')).toStrictEqual({
      config: {
        name: 'simple_dyna_sequence',
        platform: 'onnxruntime_onnx',
        max_batch_size: 8,
        input: [input('INPUT', 'TYPE_INT32', [1])],
        output: [output('OUTPUT', 'TYPE_INT32', [1])],
        instance_group: [{ name: 'simple_dyna_sequence_0', count: 2, gpus: [], kind: 'KIND_CPU' }],
        default_model_filename: '',
        sequence_batching: {
          max_sequence_idle_microseconds: 10_000_000,
          control_input: [
            control('START', 'CONTROL_SEQUENCE_START'),
            control('END', 'CONTROL_SEQUENCE_END'),
            control('READY', 'CONTROL_SEQUENCE_READY'),
            {
              name: 'CORRID',
              control: [{ kind: 'CONTROL_SEQUENCE_CORRID', int32_false_true: [], fp32_false_true: [], data_type: 'TYPE_UINT64', bool_false_true: [] }],
            },
          ],
          oldest: { max_candidate_sequences: 1024, preferred_batch_size: [8], max_queue_delay_microseconds: 10_000, preserve_ordering: false },
          state: [],
          iterative_sequence: false,
        },
        parameters: { execute_delay_ms: { string_value: '3' } },
        model_warmup: [],
        backend: '',
        version_policy: LATEST_ONE,
      },
      warnings: [],
    });
  });

  it('densenet_onnx: format, reshape and label file', () => {
    const { config } = load('densenet_onnx');
    expect(config.max_batch_size).toBe(0);
    expect(config.input).toStrictEqual([input('data_0', 'TYPE_FP32', [3, 224, 224], { format: 'FORMAT_NCHW', reshape: { shape: [1, 3, 224, 224] } })]);
    expect(config.output).toStrictEqual([
      output('fc6_1', 'TYPE_FP32', [1000], { reshape: { shape: [1, 1000, 1, 1] }, label_filename: 'densenet_labels.txt' }),
    ]);
  });

  it('ensemble_python_resnet50: steps with maps, and no instance group for an ensemble', () => {
    const { config, warnings } = load('ensemble_python_resnet50');
    expect(warnings).toEqual([]);
    expect(config).toStrictEqual({
      name: 'ensemble_python_resnet50',
      platform: 'ensemble',
      max_batch_size: 256,
      input: [input('INPUT', 'TYPE_UINT8', [-1])],
      output: [output('OUTPUT', 'TYPE_FP32', [1000])],
      instance_group: [],
      default_model_filename: '',
      parameters: {},
      ensemble_scheduling: {
        step: [
          { model_name: 'preprocess', model_version: -1, input_map: { INPUT_0: 'INPUT' }, output_map: { OUTPUT_0: 'preprocessed_image' } },
          { model_name: 'resnet50_trt', model_version: -1, input_map: { input: 'preprocessed_image' }, output_map: { output: 'OUTPUT' } },
        ],
        max_inflight_requests: 0,
      },
      model_warmup: [],
      backend: '',
      version_policy: LATEST_ONE,
    });
  });

  it('simple_ensemble: maps written as lists of entries', () => {
    const steps = load('simple_ensemble').config.ensemble_scheduling!.step;
    expect(steps.map((s) => [s.model_version, s.input_map, s.output_map])).toStrictEqual([
      [1, { INPUT0: 'INPUT0', INPUT1: 'INPUT1' }, { OUTPUT0: 'out0', OUTPUT1: 'out1' }],
      [-1, { INPUT0: 'out0', INPUT1: 'out1' }, { OUTPUT0: 'OUTPUT0', OUTPUT1: 'OUTPUT1' }],
    ]);
  });

  it('add_sub (python): repeated input/output blocks join, one CPU instance for python', () => {
    expect(load('add_sub')).toStrictEqual({
      config: {
        name: 'add_sub',
        platform: '',
        max_batch_size: 0,
        input: [input('INPUT0', 'TYPE_FP32', [4]), input('INPUT1', 'TYPE_FP32', [4])],
        output: [output('OUTPUT0', 'TYPE_FP32', [4]), output('OUTPUT1', 'TYPE_FP32', [4])],
        instance_group: [{ name: 'add_sub_0', count: 1, gpus: [], kind: 'KIND_CPU' }],
        default_model_filename: '',
        parameters: {},
        model_warmup: [],
        backend: 'python',
        version_policy: LATEST_ONE,
      },
      warnings: [],
    });
  });

  it('repeat_int32 (decoupled): model_transaction_policy with decoupled: True', () => {
    const { config } = load('repeat_int32');
    expect(config.model_transaction_policy).toStrictEqual({ decoupled: true });
    expect(config.input.map((i) => [i.name, i.data_type, i.dims])).toStrictEqual([
      ['IN', 'TYPE_INT32', [-1]],
      ['DELAY', 'TYPE_UINT32', [-1]],
      ['WAIT', 'TYPE_UINT32', [1]],
    ]);
    expect(config.output.map((o) => o.name)).toStrictEqual(['OUT', 'IDX']);
  });

  it('instance_kind: single input and output blocks without a list', () => {
    const { config } = load('instance_kind');
    expect(config.max_batch_size).toBe(128);
    expect(config.input).toStrictEqual([input('INPUT', 'TYPE_FP32', [3, 224, 224], { format: 'FORMAT_NCHW' })]);
    expect(config.output).toStrictEqual([output('OUTPUT', 'TYPE_FP32', [1000])]);
    expect(config.instance_group).toStrictEqual([{ name: 'resnet50_0', count: 1, gpus: [], kind: 'KIND_CPU' }]);
  });

  it('dynamic_batching_priority: queue policies keyed by level, full per level', () => {
    const { config, warnings } = load('dynamic_batching_priority');
    expect(warnings).toEqual([]);
    expect(config.dynamic_batching).toStrictEqual({
      preferred_batch_size: [4, 8],
      max_queue_delay_microseconds: 100,
      preserve_ordering: false,
      priority_levels: 2,
      default_priority_level: 2,
      default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 5000, allow_timeout_override: true, max_queue_size: 32 },
      priority_queue_policy: {
        1: { timeout_action: 'DELAY', default_timeout_microseconds: 1000, allow_timeout_override: false, max_queue_size: 8 },
        2: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 64 },
      },
    });
  });

  it('max_priority_level: 64-bit maxima beyond 2^53 - 1 are held as 2^53 - 1, with a warning', () => {
    const { config, warnings } = load('max_priority_level');
    expect(config.dynamic_batching).toStrictEqual({
      preferred_batch_size: [1],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: Number.MAX_SAFE_INTEGER,
      default_priority_level: 4294967295,
      priority_queue_policy: {
        4294967296: { timeout_action: 'REJECT', default_timeout_microseconds: Number.MAX_SAFE_INTEGER, allow_timeout_override: true, max_queue_size: 10 },
      },
    });
    expect(warnings).toStrictEqual([
      "max_priority_level.pbtxt:48:22: value 18446744073709551615 of field 'priority_levels' is beyond what serve-fn holds exactly and is read as 9007199254740991",
      "max_priority_level.pbtxt:56:34: value 18446744073709551615 of field 'default_timeout_microseconds' is beyond what serve-fn holds exactly and is read as 9007199254740991",
    ]);
  });

  it('warmup: zero, random and file data, scalar dims, entries as blocks and as a list', () => {
    expect(load('warmup').config.model_warmup).toStrictEqual([
      {
        name: 'regular sample',
        batch_size: 1,
        inputs: {
          INPUT0: { data_type: 'TYPE_FP32', dims: [16], zero_data: true },
          INPUT1: { data_type: 'TYPE_STRING', dims: [16], random_data: true },
        },
        count: 0,
      },
      {
        name: 'file sample',
        batch_size: 8,
        inputs: {
          INPUT0: { data_type: 'TYPE_FP32', dims: [16], input_data_file: 'raw_fp32_data' },
          INPUT1: { data_type: 'TYPE_STRING', dims: [16], input_data_file: 'raw_string_data' },
        },
        count: 2,
      },
    ]);
  });

  it('warmup_decoupled: warmup and decoupled together', () => {
    const { config } = load('warmup_decoupled');
    expect(config.model_warmup).toStrictEqual([
      { name: 'decoupled sample', batch_size: 1, inputs: { INPUT: { data_type: 'TYPE_FP32', dims: [4], zero_data: true } }, count: 0 },
    ]);
    expect(config.model_transaction_policy).toStrictEqual({ decoupled: true });
  });
});

describe('buildModelConfig defaults', () => {
  it('fills the name from the model folder and names unnamed groups <model>_<index>', () => {
    const { config } = build('instance_group [ { kind: KIND_GPU gpus: [0, 1] count: 3 }, { name: "mine" kind: KIND_MODEL } ]', 'resnet');
    expect(config.name).toBe('resnet');
    expect(config.instance_group).toStrictEqual([
      { name: 'resnet_0', count: 3, gpus: [0, 1], kind: 'KIND_GPU' },
      { name: 'mine', count: 1, gpus: [], kind: 'KIND_MODEL' },
    ]);
  });

  it('keeps the name written in the file over the folder name', () => {
    expect(build('name: "written"', 'folder').config.name).toBe('written');
  });

  it('gives KIND_CPU groups two instances on the onnxruntime and tensorflow backends only', () => {
    const counts = (head: string): number => build(`${head}\ninstance_group [{ kind: KIND_CPU }]`).config.instance_group[0]!.count;
    expect(counts('backend: "onnxruntime"')).toBe(2);
    expect(counts('platform: "tensorflow_savedmodel"')).toBe(2);
    expect(counts('backend: "pytorch"')).toBe(1);
    expect(counts('backend: "python"')).toBe(1);
  });

  it('keeps each version policy form, and defaults an empty one to the latest version', () => {
    expect(build('version_policy: { all { }}').config.version_policy).toStrictEqual({ all: {} });
    expect(build('version_policy: { specific: { versions: [1, 3] }}').config.version_policy).toStrictEqual({ specific: { versions: [1, 3] } });
    expect(build('version_policy { latest { num_versions: 2 } }').config.version_policy).toStrictEqual({ latest: { num_versions: 2 } });
    expect(build('version_policy { }').config.version_policy).toStrictEqual(LATEST_ONE);
  });

  it('sets dynamic batching preferred sizes to [max_batch_size] only when batching', () => {
    expect(build('max_batch_size: 8 dynamic_batching { }').config.dynamic_batching?.preferred_batch_size).toStrictEqual([8]);
    expect(build('dynamic_batching { }').config.dynamic_batching).toStrictEqual({
      preferred_batch_size: [],
      max_queue_delay_microseconds: 0,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
      priority_queue_policy: {},
    });
  });

  it('fills a map entry that has no value with the value type defaults', () => {
    const { config } = build('max_batch_size: 8\ndynamic_batching { priority_levels: 3 priority_queue_policy { key: 3 } }');
    expect(config.dynamic_batching?.priority_queue_policy).toStrictEqual({
      3: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 },
    });
  });

  it('keeps a map key named __proto__ as an ordinary entry, later entries replacing earlier ones', () => {
    const { config } = build('parameters { key: "__proto__" value { string_value: "a" } }\nparameters [ { key: "k" value { string_value: "1" } }, { key: "k" value { string_value: "2" } } ]');
    expect(Object.getPrototypeOf(config.parameters)).toBe(Object.prototype);
    expect(Object.entries(config.parameters)).toStrictEqual([['__proto__', { string_value: 'a' }], ['k', { string_value: '2' }]]);
  });

  it('reads sequence state with initial state, the direct strategy and float controls', () => {
    const source = `sequence_batching {
      direct { max_queue_delay_microseconds: 50 minimum_slot_utilization: 0.5 }
      control_input [{ name: "READY" control [{ kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1.5e0 ] }] }]
      control_input [{ name: "B" control [{ kind: 1 bool_false_true: [ f, True ] }] }]
      state [{ input_name: "in" output_name: "out" data_type: TYPE_INT32 dims: [ -1 ]
               initial_state: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true name: "zeros" } }]
    }`;
    expect(build(source).config.sequence_batching).toStrictEqual({
      max_sequence_idle_microseconds: 1_000_000,
      control_input: [
        { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [], fp32_false_true: [0, 1.5], data_type: 'TYPE_INVALID', bool_false_true: [] }] },
        { name: 'B', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [], fp32_false_true: [], data_type: 'TYPE_INVALID', bool_false_true: [false, true] }] },
      ],
      direct: { max_queue_delay_microseconds: 50, minimum_slot_utilization: 0.5 },
      state: [
        {
          input_name: 'in',
          output_name: 'out',
          data_type: 'TYPE_INT32',
          dims: [-1],
          initial_state: [{ data_type: 'TYPE_INT32', dims: [1], zero_data: true, name: 'zeros' }],
          use_same_buffer_for_input_output: false,
          use_growable_memory: false,
        },
      ],
      iterative_sequence: false,
    });
  });

  it('reads booleans in every spelling and integers in hex and octal', () => {
    const { config } = build('max_batch_size: 0x10\nresponse_cache { enable: t }\nmodel_transaction_policy { decoupled: 1 }\ninput { dims: [ 010, -0x2 ] optional: True }');
    expect(config.max_batch_size).toBe(16);
    expect(config.response_cache).toStrictEqual({ enable: true });
    expect(config.model_transaction_policy).toStrictEqual({ decoupled: true });
    expect(config.input[0]?.dims).toStrictEqual([8, -2]);
    expect(config.input[0]?.optional).toBe(true);
  });

  it('takes a parsed tree directly', () => {
    const tree = parsePbtxt('name: "t" max_batch_size: 2', 'tree.pbtxt');
    expect(buildModelConfig(tree, 'tree.pbtxt').config.max_batch_size).toBe(2);
  });
});

describe('buildModelConfig warnings', () => {
  it('warns, with file, line and column, about unknown fields and fields serve-fn does not use', () => {
    const { config, warnings } = load('unknown_fields');
    expect(warnings).toStrictEqual([
      "unknown_fields.pbtxt:9:5: unknown field 'colour' in ModelInput is ignored",
      "unknown_fields.pbtxt:12:1: field 'optimization' in ModelConfig is not used by serve-fn and is ignored",
      "unknown_fields.pbtxt:16:5: field 'rate_limiter' in ModelInstanceGroup is not used by serve-fn and is ignored",
      "unknown_fields.pbtxt:19:1: unknown field 'max_batch_sise' in ModelConfig is ignored",
    ]);
    expect(config.max_batch_size).toBe(4);
    expect(config.input).toStrictEqual([input('INPUT0', 'TYPE_FP32', [4])]);
  });
});

describe('buildModelConfig errors', () => {
  it('rejects a string where a number belongs, at the value', () => {
    const err = configError('name: "m"\nmax_batch_size: "8"');
    expect(err).toBeInstanceOf(ServeFnError);
    expect(err.code).toBe('SF_ERR_CONFIG_PARSE');
    expect(err.statusCode).toBe(400);
    expect(err.message).toBe(`config.pbtxt:2:17: field 'max_batch_size' expects an integer (int32), found string "8"`);
  });

  it('rejects a string inside a list of dims (wrong_type fixture)', () => {
    expect(() => load('wrong_type')).toThrow(`wrong_type.pbtxt:7:16: field 'dims' expects an integer (int64), found string "four"`);
  });

  it('rejects values of the wrong kind for strings, booleans, enums, floats and messages', () => {
    expect(configError('name: simple').message).toBe("config.pbtxt:1:7: field 'name' expects a quoted string, found 'simple'");
    expect(configError('response_cache { enable: yes }').message).toBe("config.pbtxt:1:26: field 'enable' expects true or false, found 'yes'");
    expect(configError('instance_group { kind: KIND_TPU }').message).toBe(
      "config.pbtxt:1:24: field 'kind' expects a Kind value (KIND_AUTO, KIND_GPU, KIND_CPU, KIND_MODEL, KIND_NPU), found 'KIND_TPU'",
    );
    expect(configError('instance_group { kind: 7 }').message).toBe(
      "config.pbtxt:1:24: field 'kind' expects a Kind value (KIND_AUTO, KIND_GPU, KIND_CPU, KIND_MODEL, KIND_NPU), found number 7",
    );
    expect(configError('max_batch_size: 1.5').message).toBe("config.pbtxt:1:17: field 'max_batch_size' expects an integer (int32), found number 1.5");
    expect(configError('sequence_batching { direct { minimum_slot_utilization: "x" } }').message).toBe(
      `config.pbtxt:1:56: field 'minimum_slot_utilization' expects a number, found string "x"`,
    );
    expect(configError('input: "x"').message).toBe(`config.pbtxt:1:8: field 'input' expects a message { ... }, found string "x"`);
    expect(configError('name { }').message).toBe("config.pbtxt:1:6: field 'name' expects a quoted string, found a message");
    expect(configError('parameters: [ "a" ]').message).toBe(
      `config.pbtxt:1:15: map field 'parameters' expects entries like { key: ... value: ... }, found string "a"`,
    );
  });

  it('rejects integers outside their proto type', () => {
    expect(configError('max_batch_size: 2147483648').message).toBe("config.pbtxt:1:17: value 2147483648 is out of range for field 'max_batch_size' (int32)");
    expect(configError('dynamic_batching { default_queue_policy { max_queue_size: -1 } }').message).toBe(
      "config.pbtxt:1:59: value -1 is out of range for field 'max_queue_size' (uint32)",
    );
  });

  it("rejects a negative max_batch_size, as Triton's model configuration validation does", () => {
    expect(configError('max_batch_size: -1')).toMatchObject({ code: 'SF_ERR_CONFIG_PARSE', statusCode: 400, message: "config.pbtxt:1:17: field 'max_batch_size' must be 0 or more, got -1" });
    expect(build('max_batch_size: 0').config.max_batch_size).toBe(0);
  });

  it('rejects a non-repeated field given twice or given a list', () => {
    expect(configError('name: "a"\nname: "b"').message).toBe("config.pbtxt:2:1: field 'name' is not repeated but is set again (first set at line 1, column 1)");
    expect(configError('max_batch_size: [ 1 ]').message).toBe("config.pbtxt:1:17: field 'max_batch_size' is not repeated and cannot take a list");
  });

  it('rejects two members of one oneof', () => {
    expect(configError('dynamic_batching { }\nsequence_batching { }').message).toBe(
      "config.pbtxt:2:1: field 'sequence_batching' cannot be set together with 'dynamic_batching' (line 1, column 1): they are alternatives in ModelConfig",
    );
    expect(configError('model_warmup { inputs { key: "x" value { zero_data: true random_data: true } } }').message).toBe(
      "config.pbtxt:1:58: field 'random_data' cannot be set together with 'zero_data' (line 1, column 42): they are alternatives in Input",
    );
  });
});

describe('modelConfigToJson', () => {
  it('prints simple as Triton serves it: snake_case, enums by name, every primitive field', () => {
    expect(modelConfigToJson(load('simple').config)).toStrictEqual({
      name: 'simple',
      platform: 'onnxruntime_onnx',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 8,
      input: ['INPUT0', 'INPUT1'].map((name) => ({
        name,
        data_type: 'TYPE_INT32',
        format: 'FORMAT_NONE',
        dims: [16],
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
        is_non_linear_format_io: false,
      })),
      output: ['OUTPUT0', 'OUTPUT1'].map((name) => ({
        name,
        data_type: 'TYPE_INT32',
        dims: [16],
        label_filename: '',
        is_shape_tensor: false,
        is_non_linear_format_io: false,
      })),
      instance_group: [{ name: 'simple', count: 1, gpus: [], kind: 'KIND_AUTO', profile: [], passive: false, secondary_devices: [], host_policy: '' }],
      default_model_filename: '',
      cc_model_filenames: {},
      metric_tags: {},
      parameters: {},
      model_warmup: [],
      backend: '',
      batch_input: [],
      batch_output: [],
      runtime: '',
    });
  });

  it('prints 64-bit integers as numbers and priority levels as string keys (qa/L0_config_json)', () => {
    const text = JSON.stringify(modelConfigToJson(load('dynamic_batching_priority').config));
    expect(text).toContain(
      '"dynamic_batching":{"preferred_batch_size":[4,8],"max_queue_delay_microseconds":100,"preserve_ordering":false,"priority_levels":2,"default_priority_level":2,' +
        '"default_queue_policy":{"timeout_action":"REJECT","default_timeout_microseconds":5000,"allow_timeout_override":true,"max_queue_size":32},' +
        '"priority_queue_policy":{"1":{"timeout_action":"DELAY","default_timeout_microseconds":1000,"allow_timeout_override":false,"max_queue_size":8},' +
        '"2":{"timeout_action":"REJECT","default_timeout_microseconds":0,"allow_timeout_override":false,"max_queue_size":64}}}',
    );
    expect(text).toContain('"dims":[-1]');
  });

  it('prints ensemble model versions as numbers and leaves out unset oneof members', () => {
    const json = modelConfigToJson(load('simple_ensemble').config);
    const text = JSON.stringify(json);
    expect(text.match(/"model_version":1\b/g)).toHaveLength(1);
    expect(text.match(/"model_version":-1\b/g)).toHaveLength(1);
    expect(json).not.toHaveProperty('dynamic_batching');
    expect(json).not.toHaveProperty('sequence_batching');
    expect((json.ensemble_scheduling as { step: object[] }).step[0]).toStrictEqual({
      model_name: 'onnx_nobatch_float32_float32_float32',
      model_version: 1,
      input_map: { INPUT0: 'INPUT0', INPUT1: 'INPUT1' },
      output_map: { OUTPUT0: 'out0', OUTPUT1: 'out1' },
      model_namespace: '',
    });
  });

  it('prints version policies, warmup and parameters in proto3 JSON form', () => {
    const json = modelConfigToJson(build('version_policy: { specific: { versions: [1] }}').config);
    expect(JSON.stringify(json)).toContain('"version_policy":{"specific":{"versions":[1]}}');
    expect(modelConfigToJson(build('version_policy { all {} }').config).version_policy).toStrictEqual({ all: {} });
    const warm = modelConfigToJson(load('warmup').config);
    expect((warm.model_warmup as object[])[0]).toStrictEqual({
      name: 'regular sample',
      batch_size: 1,
      inputs: {
        INPUT0: { data_type: 'TYPE_FP32', dims: [16], zero_data: true },
        INPUT1: { data_type: 'TYPE_STRING', dims: [16], random_data: true },
      },
      count: 0,
    });
    expect(modelConfigToJson(load('simple_dyna_sequence').config).parameters).toStrictEqual({ execute_delay_ms: { string_value: '3' } });
  });

  it('keeps initial_state dims as strings, as Triton does, and spells non-finite floats', () => {
    const source = `sequence_batching {
      control_input [{ name: "C" control [{ kind: CONTROL_SEQUENCE_START fp32_false_true: [ -inf, nan ] }] }]
      state [{ input_name: "i" output_name: "o" dims: [ 2 ] initial_state [{ dims: [ 2 ] data_file: "init" }] }]
    }`;
    const sequence = modelConfigToJson(build(source).config).sequence_batching as Record<string, unknown>;
    expect(sequence).toStrictEqual({
      max_sequence_idle_microseconds: 1_000_000,
      control_input: [
        { name: 'C', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [], fp32_false_true: ['-Infinity', 'NaN'], data_type: 'TYPE_INVALID', bool_false_true: [] }] },
      ],
      state: [
        {
          input_name: 'i',
          output_name: 'o',
          data_type: 'TYPE_INVALID',
          dims: [2],
          initial_state: [{ data_type: 'TYPE_INVALID', dims: ['2'], data_file: 'init', name: '' }],
          use_same_buffer_for_input_output: false,
          use_growable_memory: false,
        },
      ],
      iterative_sequence: false,
    });
  });

  it('does not share default lists or maps between calls', () => {
    const config: ModelConfig = load('simple').config;
    const first = modelConfigToJson(config);
    (first.batch_input as unknown[]).push('changed');
    expect(modelConfigToJson(config).batch_input).toStrictEqual([]);
  });
});
