import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readModelSource } from '../../src/model-repository/model-source.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';
import { thrown } from '../helpers/thrown.js';

const root = scratchFolder('source');
afterAll(() => rmSync(root, { recursive: true, force: true }));

function source(name: string, files: Record<string, string>, configJson?: string) {
  writeFiles(root, Object.fromEntries(Object.entries(files).map(([path, content]) => [`${name}/${path}`, content])));
  return readModelSource(root, name, join(root, name), configJson);
}

function failure(fn: () => unknown): { code: string; message: string } {
  const { code, message } = thrown(fn);
  return { code, message };
}

describe('readModelSource', () => {
  it('detects a config-less ONNX model and serves its newest version', () => {
    const read = source('plain', { '1/model.onnx': 'x', '3/model.onnx': 'x', '2/model.onnx': 'x' });
    expect(read.kind).toBe('onnx');
    expect(read.config).toMatchObject({ name: 'plain', platform: 'onnxruntime_onnx', backend: 'onnxruntime', max_batch_size: 0 });
    expect(read.versions).toEqual([{ version: '3', file: join(root, 'plain', '3', 'model.onnx') }]);
  });

  it('applies the version policy and finds model.ts or model.js', () => {
    const read = source('code', { 'config.pbtxt': 'version_policy { all {} }', '1/model.js': '', '2/model.ts': '' });
    expect(read.kind).toBe('module');
    expect(read.config.backend).toBe('serve-fn');
    expect(read.versions).toEqual([
      { version: '1', file: join(root, 'code', '1', 'model.js') },
      { version: '2', file: join(root, 'code', '2', 'model.ts') },
    ]);
  });

  it('takes backend "python" when a model.ts stands in for model.py', () => {
    expect(source('py', { 'config.pbtxt': 'backend: "python"', '1/model.ts': '' }).kind).toBe('module');
  });

  it('runs a model.py alone with the Python backend', () => {
    const read = source('pyonly', { 'config.pbtxt': 'backend: "python"', '1/model.py': '' });
    expect(read.kind).toBe('python');
    expect(read.versions[0].file?.endsWith('/1/model.py')).toBe(true);
  });

  it('reads npu_ge models: model.onnx, or the default_model_filename, run by GE', () => {
    const ge = source('ge_onnx', { 'config.pbtxt': 'backend: "npu_ge"', '1/model.onnx': '' });
    expect(ge.kind).toBe('npu_ge');
    expect(ge.config).toMatchObject({ platform: '', backend: 'npu_ge' });
    expect(ge.versions).toEqual([{ version: '1', file: join(root, 'ge_onnx', '1', 'model.onnx') }]);
    const named = source('ge_named', { 'config.pbtxt': 'backend: "npu_ge" default_model_filename: "clip.onnx"', '1/clip.onnx': '' });
    expect(named.versions[0].file).toBe(join(root, 'ge_named', '1', 'clip.onnx'));
  });

  it('runs a model.onnx placed on NPUs (serve-fn\'s KIND_NPU) through GE, a model.om through AscendCL', () => {
    const ge = source('npu_kind_onnx', { 'config.pbtxt': 'instance_group [ { kind: KIND_NPU gpus: [ 1 ] } ]', '1/model.onnx': '' });
    expect(ge.kind).toBe('npu_ge');
    expect(ge.config).toMatchObject({ platform: '', backend: 'npu_ge' });
    expect(source('npu_kind_om', { 'config.pbtxt': 'instance_group [ { kind: KIND_NPU } ]', '1/model.om': '' }).kind).toBe('npu_om');
  });

  it('refuses KIND_NPU with ONNX Runtime, or mixed with other kinds', () => {
    expect(failure(() => source('npu_ort', { 'config.pbtxt': 'platform: "onnxruntime_onnx" instance_group [ { kind: KIND_NPU } ]', '1/model.onnx': '' }))).toMatchObject({
      code: 'SF_ERR_CONFIG_INVALID', message: expect.stringContaining('ONNX Runtime does not run on an NPU (KIND_NPU)'),
    });
    expect(failure(() => source('npu_mixed', { 'config.pbtxt': 'instance_group [ { kind: KIND_NPU }, { kind: KIND_CPU } ]', '1/model.onnx': '' }))).toMatchObject({
      code: 'SF_ERR_CONFIG_INVALID', message: expect.stringContaining('mixes KIND_NPU with other kinds'),
    });
  });

  it('reads npu_om models and ensembles, an ensemble without a version folder as version 1', () => {
    expect(source('om', { 'config.pbtxt': 'backend: "npu_om"', '1/model.om': '' }).versions).toEqual([{ version: '1', file: join(root, 'om', '1', 'model.om') }]);
    const ensemble = source('ens', { 'config.pbtxt': 'platform: "ensemble"\nensemble_scheduling { step [ { model_name: "a" } ] }' });
    expect(ensemble.kind).toBe('ensemble');
    expect(ensemble.versions).toEqual([{ version: '1' }]);
  });

  it('lets a JSON config replace config.pbtxt', () => {
    const read = source('override', { 'config.pbtxt': 'max_batch_size: 2', '1/model.onnx': '' }, '{"max_batch_size": 6}');
    expect(read.config.max_batch_size).toBe(6);
  });

  it('reads a stateful model (sequence_batching), which the sequence scheduler serves', () => {
    const read = source('seq', { 'config.pbtxt': 'sequence_batching { max_sequence_idle_microseconds: 2000 }', '1/model.onnx': '' });
    expect(read.config.sequence_batching?.max_sequence_idle_microseconds).toBe(2000);
  });

  it('honours default_model_filename', () => {
    const read = source('named', { 'config.pbtxt': 'default_model_filename: "net.onnx"', '1/net.onnx': '' });
    expect(read.versions[0].file).toBe(join(root, 'named', '1', 'net.onnx'));
  });

  it.each(['../../outside/1/model.ts', '../model.ts', '/etc/passwd', '.'])('refuses a default_model_filename that leads outside the version folder (%s)', (named) => {
    // The traversal of Triton CVE-2023-31036: a load request's config must not run a file from elsewhere.
    writeFiles(root, { 'outside/1/model.ts': '', 'escape/model.ts': '' });
    const config = JSON.stringify({ name: 'escape', backend: 'serve-fn', default_model_filename: named });
    expect(failure(() => source('escape', { '1/x': '' }, config))).toEqual({
      code: 'SF_ERR_CONFIG_INVALID',
      message: `Model configuration for 'escape' is invalid: default_model_filename '${named}' is not a file inside the version folder ${join(root, 'escape', '1')}`,
    });
    // Without a backend the kind is detected from the named file, which is checked the same way.
    const detected = JSON.stringify({ name: 'escape', default_model_filename: named });
    expect(failure(() => source('escape', {}, detected)).code).toBe('SF_ERR_CONFIG_INVALID');
  });

  it.each([
    ['ge', { 'config.pbtxt': 'backend: "npu_ge"', '1/model.om': '' }, 'SF_ERR_REPOSITORY_INVALID', `Model repository '${root}' is invalid: model file ${join(root, 'ge', '1', 'model.onnx')} does not exist`],
    ['gestatic', { 'config.pbtxt': 'backend: "npu_ge" dynamic_batching { } parameters { key: "static_model" value { string_value: "1" } }', '1/model.onnx': '' }, 'SF_ERR_CONFIG_INVALID', "Model configuration for 'gestatic' is invalid: parameter static_model \"1\" compiles a fixed-shape graph and cannot be combined with dynamic_batching; remove one of them"],
    ['gedevices', { 'config.pbtxt': 'backend: "npu_ge" parameters { key: "device_ids" value { string_value: "0,x" } }', '1/model.onnx': '' }, 'SF_ERR_CONFIG_INVALID', "Model configuration for 'gedevices' is invalid: parameter device_ids must list NPU ids such as \"0\" or \"0,1\", got '0,x'"],
    ['trt', { 'config.pbtxt': 'platform: "tensorrt_plan"', '1/model.plan': '' }, 'SF_ERR_BACKEND_UNSUPPORTED', "Backend 'tensorrt_plan' is not supported yet: model 'trt': serve-fn serves onnxruntime, npu_om, npu_ge, python (model.py), serve-fn (model.ts) and ensemble models"],
    ['misnamed', { 'config.pbtxt': 'name: "other"', '1/model.onnx': '' }, 'SF_ERR_CONFIG_INVALID', "Model configuration for 'misnamed' is invalid: CONFIG names the model 'other', but its folder is 'misnamed'; they must match"],
    ['bad', { 'config.pbtxt': 'max_batch_size: "x"' }, 'SF_ERR_CONFIG_PARSE', 'CONFIG:1:17: field \'max_batch_size\' expects an integer (int32), found string "x"'],
  ])('refuses %s', (name, files, code, message) => {
    expect(failure(() => source(name, files))).toEqual({ code, message: message.replace('CONFIG', join(root, name, 'config.pbtxt')) });
  });

  it('names the path of a bad layout', () => {
    expect(failure(() => readModelSource(root, 'absent', join(root, 'absent')))).toEqual({
      code: 'SF_ERR_REPOSITORY_INVALID',
      message: `Model repository '${root}' is invalid: it has no model folder 'absent' (${join(root, 'absent')})`,
    });
    expect(failure(() => source('noversion', { 'config.pbtxt': 'platform: "onnxruntime_onnx"' })).message).toBe(
      `Model repository '${root}' is invalid: model 'noversion' has no version folder: put its model.onnx in ${join(root, 'noversion', '1')}`,
    );
    expect(failure(() => source('nofile', { 'config.pbtxt': 'backend: "onnxruntime"', '1/readme.txt': '' })).message).toBe(
      `Model repository '${root}' is invalid: model file ${join(root, 'nofile', '1', 'model.onnx')} does not exist`,
    );
    expect(failure(() => source('unknownfile', { '1/weights.bin': '' })).message).toBe(
      `Model repository '${join(root, 'unknownfile')}' is invalid: ${join(root, 'unknownfile', '1')} holds no model.onnx, model.ts, model.js or model.om; set backend or platform in config.pbtxt, or add the model file`,
    );
    expect(failure(() => source('nothing', { 'config.pbtxt': '' })).message).toBe(
      `Model repository '${join(root, 'nothing')}' is invalid: it has no numeric version folder (such as 1/) holding the model file`,
    );
  });
});
