import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAddSubModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { createError } from '../../src/errors/index.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { buildModelVersions, type VersionBuilderContext } from '../../src/model-repository/model-version-builder.js';
import { readModelSource } from '../../src/model-repository/model-source.js';
import { int32, inThreadInstances, scratchFolder, SIMPLE_CONFIG, values, writeFiles } from '../fixtures/repository/repository-files.js';
import { buildResnetStandIn, GE_RESNET_CONFIG } from '../fixtures/npu/ge-models.js';
import type { ModelContextData } from '../../src/definition/model-context.js';
import type { TensorModelPlan } from '../../src/wire/tensor-model-plan.js';
import { noStreams } from '../helpers/no-streams.js';

const root = scratchFolder('builder');
afterAll(() => rmSync(root, { recursive: true, force: true }));

const context: VersionBuilderContext = {
  recorder: new InferenceRecorder({ collectProcessMetrics: false }),
  log: () => undefined,
  infer: () => Promise.reject(new Error('unused')),
  resolve: (name) => {
    throw createError('SF_ERR_MODEL_UNKNOWN', name);
  },
  instanceFactory: inThreadInstances,
};

function build(name: string, files: Record<string, string | Uint8Array>) {
  writeFiles(root, Object.fromEntries(Object.entries(files).map(([path, content]) => [`${name}/${path}`, content])));
  return buildModelVersions(readModelSource(root, name, join(root, name)), context);
}

describe('buildModelVersions', () => {
  it("completes a config-less ONNX model from the file, batching as Triton's onnxruntime backend does", async () => {
    const [version] = await build('auto', { '1/model.onnx': buildAddSubModel({ size: 16 }) });
    expect(version.info).toMatchObject({
      name: 'auto', version: '1', platform: 'onnxruntime_onnx', maxBatchSize: 4, decoupled: false,
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [16] }, { name: 'INPUT1', datatype: 'INT32', shape: [16] }],
      outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [16] }, { name: 'OUTPUT1', datatype: 'INT32', shape: [16] }],
    });
    expect(version.info.config).toMatchObject({
      name: 'auto', platform: 'onnxruntime_onnx', backend: 'onnxruntime', max_batch_size: 4,
      dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 0 },
      input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }, { name: 'INPUT1', data_type: 'TYPE_INT32', dims: [16] }],
    });
  });

  it("keeps Triton's simple config as written", async () => {
    const [version] = await build('simple', { 'config.pbtxt': SIMPLE_CONFIG, '1/model.onnx': buildAddSubModel({ size: 16 }) });
    expect(version.info.maxBatchSize).toBe(8);
    expect(version.info.config.dynamic_batching).toBeUndefined();
  });

  it('builds one served model per version the policy selects', async () => {
    const versions = await build('multi', {
      'config.pbtxt': 'version_policy { latest { num_versions: 2 } }',
      '1/model.onnx': buildAddSubModel(), '2/model.onnx': buildAddSubModel(), '3/model.onnx': buildAddSubModel(),
    });
    expect(versions.map((v) => v.info.version)).toEqual(['2', '3']);
  });

  it('checks a written configuration against the ONNX file', async () => {
    await expect(build('mismatch', { 'config.pbtxt': SIMPLE_CONFIG.replace('"simple"', '"mismatch"').replace(/TYPE_INT32/g, 'TYPE_FP32'), '1/model.onnx': buildAddSubModel() }))
      .rejects.toThrow(`Model configuration for 'mismatch' is invalid: input 'INPUT0' is TYPE_FP32 in the configuration but TYPE_INT32 in ${join(root, 'mismatch', '1', 'model.onnx')}`);
  });

  it('wants model.ts tensors declared, and reports its platform as serve-fn', async () => {
    await expect(build('undeclared', { '1/model.ts': '' })).rejects.toThrow(
      "Model configuration for 'undeclared' is invalid: a model.ts / model.js model declares its input and output tensors in config.pbtxt",
    );
    const io = 'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]';
    const [version] = await build('declared', { 'config.pbtxt': io, '1/model.ts': '' });
    expect(version.info.platform).toBe('serve-fn');
  });

  it('feeds the control inputs of a stateful ONNX model, which clients neither see nor send', async () => {
    const column = (name: string, datatype: 'INT32' | 'INT64') => ({ name, datatype, shape: ['batch', 1] });
    const model = buildOnnxModel({
      inputs: [column('INPUT', 'INT32'), column('START', 'INT32'), column('CORRID', 'INT64')],
      outputs: [column('OUTPUT', 'INT32'), column('SEEN_CORRID', 'INT64')],
      nodes: [
        { op: 'Add', inputs: ['INPUT', 'START'], outputs: ['OUTPUT'] },
        { op: 'Identity', inputs: ['CORRID'], outputs: ['SEEN_CORRID'] },
      ],
    });
    const config = `max_batch_size: 2
      sequence_batching { control_input [
        { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
        { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } ] } ] }`;
    const [version] = await build('stateful', { 'config.pbtxt': config, '1/model.onnx': model });
    expect(version.info.inputs).toEqual([{ name: 'INPUT', datatype: 'INT32', shape: [1] }]);
    expect(version.info.config).not.toHaveProperty('dynamic_batching');
    await version.load();
    try {
      const infer = async (value: number, parameters: Record<string, unknown>) => {
        const response = await version.infer({ inputs: [int32('INPUT', [1, 1], [value])], parameters });
        return response.outputs.map((t) => [t.name, values(t)]);
      };
      expect(await infer(10, { sequence_id: 9, sequence_start: true })).toEqual([['OUTPUT', [11]], ['SEEN_CORRID', [9]]]);
      expect(await infer(20, { sequence_id: 9, sequence_end: true })).toEqual([['OUTPUT', [20]], ['SEEN_CORRID', [9]]]);
      await expect(version.infer({ inputs: [int32('INPUT', [1, 1], [1]), int32('START', [1, 1], [1])], parameters: { sequence_id: 3, sequence_start: true } }))
        .rejects.toThrow("Unexpected input 'START' for model 'stateful'.");
    } finally {
      await version.unload();
    }
  });

  it('refuses a dynamic_batching the batcher cannot run', async () => {
    await expect(build('prefer', { 'config.pbtxt': 'max_batch_size: 4\ndynamic_batching { preferred_batch_size: [ 8 ] }', '1/model.onnx': buildAddSubModel() }))
      .rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_CONFIG_INVALID', message: expect.stringContaining('size 8 exceeds maxBatchSize 4') }));
  });

  it('checks an ensemble against the models served now', async () => {
    const config = `platform: "ensemble"
      max_batch_size: 8
      input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] } ]
      output [ { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
      ensemble_scheduling { step [ { model_name: "gone" model_version: -1 input_map { key: "X" value: "A" } output_map { key: "Y" value: "B" } } ] }`;
    await expect(build('ens', { 'config.pbtxt': config })).rejects.toThrow(
      "Ensemble 'ens' is invalid: step 0 (model 'gone') uses a model that is not loaded; load it before the ensemble",
    );
  });

  it("serves Huawei's GE backend example config unchanged: npu_ge on NPUs 4 and 5, one slot each, I/O checked against the ONNX file", async () => {
    const started: { plan: TensorModelPlan; context: ModelContextData }[] = [];
    const recording: VersionBuilderContext = {
      ...context,
      // Records what each instance would boot with; nothing runs, so no NPU is needed.
      instanceFactory: (index, plan, instanceContext) => ({
        index, ...noStreams,
        start: async () => void started.push({ plan, context: instanceContext }),
        execute: () => Promise.reject(new Error('not run here')),
        stop: async () => undefined,
      }),
    };
    writeFiles(root, { 'resnet/config.pbtxt': GE_RESNET_CONFIG, 'resnet/1/model.onnx': buildResnetStandIn() });
    const [version] = await buildModelVersions(readModelSource(root, 'resnet', join(root, 'resnet')), recording);
    expect(version.info).toMatchObject({
      name: 'resnet', platform: 'npu_ge', maxBatchSize: 64,
      inputs: [{ name: 'data', datatype: 'FP32', shape: [3, 224, 224] }],
      outputs: [{ name: 'resnetv24_dense0_fwd', datatype: 'FP32', shape: [1000] }],
    });
    await version.load();
    expect(started.map(({ plan, context: c }) => [plan.kind, c.instanceName, c.deviceKind, c.deviceId, plan.sessionOptions])).toEqual([
      ['npu_ge', 'resnet_0_0', 'npu', 4, { slots: 1 }],
      ['npu_ge', 'resnet_0_1', 'npu', 5, { slots: 1 }],
    ]);
    expect(started[0].plan.file).toBe(join(root, 'resnet', '1', 'model.onnx'));
    await version.unload();
  });

  it('refuses an npu_ge configuration that does not match its ONNX file', async () => {
    const wrong = GE_RESNET_CONFIG.replace('name: "resnet"', 'name: "resnet_wrong"').replace('dims: [3, 224, 224 ]', 'dims: [3, 112, 112 ]');
    await expect(build('resnet_wrong', { 'config.pbtxt': wrong, '1/model.onnx': buildResnetStandIn() })).rejects.toThrow(
      "input 'data' has shape [-1,3,112,112] in the configuration, batch dimension included, but [-1,3,224,224]",
    );
  });
});
