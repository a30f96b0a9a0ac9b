import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { privateTmpdir } from '../helpers/private-tmpdir.js';
import { buildAddSubModel, buildIdentityModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { FolderModelRepository, type FolderModelRepositoryOptions } from '../../src/model-repository/folder-model-repository.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { inThreadInstances, int32, range, scratchFolder, SIMPLE_CONFIG, values, writeFiles } from '../fixtures/repository/repository-files.js';

privateTmpdir();

const ADD_SUB = buildAddSubModel({ size: 16 });
const cleanup: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function repository(files: Record<string, string | Uint8Array>, options: Partial<FolderModelRepositoryOptions> = {}) {
  const root = scratchFolder('repo');
  writeFiles(root, files);
  const repo = new FolderModelRepository({ root, recorder: new InferenceRecorder({ collectProcessMetrics: false }), instanceFactory: inThreadInstances, ...options });
  cleanup.push(() => rmSync(root, { recursive: true, force: true }), () => repo.close());
  return { root, repo };
}

async function addSub(repo: FolderModelRepository, name: string, version?: string) {
  const response = await repo.get(name, version).infer({ inputs: [int32('INPUT0', [1, 16], range(16)), int32('INPUT1', [1, 16], range(16, () => 1))] });
  return response.outputs.map(values);
}

const ENSEMBLE = `
name: "a_pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "z_simple" model_version: -1
  input_map [ { key: "INPUT0" value: "X" }, { key: "INPUT1" value: "X" } ]
  output_map { key: "OUTPUT0" value: "Y" } } ] }`;

describe('FolderModelRepository in none mode', () => {
  it('loads every model at start, ensembles after the models they use', async () => {
    const { repo } = repository({
      'a_pipeline/config.pbtxt': ENSEMBLE,
      'z_simple/config.pbtxt': SIMPLE_CONFIG.replace('"simple"', '"z_simple"'),
      'z_simple/1/model.onnx': ADD_SUB,
    });
    await repo.start();
    expect(repo.models().map((m) => `${m.info.name}:${m.info.version}:${m.ready()}`)).toEqual(['a_pipeline:1:true', 'z_simple:1:true']);
    const response = await repo.get('a_pipeline').infer({ inputs: [int32('X', [1, 16], range(16))] });
    expect(values(response.outputs[0])).toEqual(range(16, (i) => 2 * i));
    expect(await repo.index()).toEqual([
      { name: 'a_pipeline', version: '1', state: 'READY' },
      { name: 'z_simple', version: '1', state: 'READY' },
    ]);
  });

  it("answers unknown names and versions with Triton's wording, and refuses load and unload", async () => {
    const { repo } = repository({ 'simple/1/model.onnx': ADD_SUB });
    await repo.start();
    expect(() => repo.get('nope')).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_UNKNOWN', message: "Request for unknown model: 'nope' is not found" }));
    expect(() => repo.get('simple', '9')).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_VERSION_UNKNOWN', message: "Request for unknown model: 'simple' version 9 is not found" }));
    await expect(repo.load('simple')).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_CONTROL_DISABLED' }));
    await expect(repo.unload('simple')).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_CONTROL_DISABLED' }));
  });

  it('fails start with the first error and unloads what it loaded', async () => {
    const { repo } = repository({ 'good/1/model.onnx': ADD_SUB, 'bad/config.pbtxt': 'max_batch_size: [' });
    const error = await repo.start().then(() => undefined, (err: Error & { code: string }) => err);
    expect(error?.code).toBe('SF_ERR_CONFIG_PARSE');
    expect(repo.models()).toEqual([]);
  });
});

describe('FolderModelRepository in explicit mode', () => {
  it('loads the startup models only, then loads and unloads on request', async () => {
    const { repo } = repository({ 'simple/1/model.onnx': ADD_SUB, 'other/1/model.onnx': ADD_SUB }, { controlMode: 'explicit', startupModels: ['simple'] });
    await repo.start();
    expect(await repo.index()).toEqual([{ name: 'other', state: 'UNKNOWN' }, { name: 'simple', version: '1', state: 'READY' }]);
    await repo.load('other');
    expect(await addSub(repo, 'other')).toEqual([range(16, (i) => i + 1), range(16, (i) => i - 1)]);
    await repo.unload('simple');
    expect(await repo.index()).toEqual([{ name: 'other', version: '1', state: 'READY' }, { name: 'simple', state: 'UNAVAILABLE', reason: 'unloaded' }]);
    expect(await repo.index({ readyOnly: true })).toEqual([{ name: 'other', version: '1', state: 'READY' }]);
    expect(() => repo.get('simple')).toThrow("Request for unknown model: 'simple' is not found");
    await expect(repo.unload('ghost')).rejects.toThrow("Request for unknown model: 'ghost' is not found");
  });

  it('reloads with a config override and keeps the old versions when a reload fails', async () => {
    const { repo } = repository({ 'simple/config.pbtxt': SIMPLE_CONFIG, 'simple/1/model.onnx': ADD_SUB, 'simple/2/model.onnx': ADD_SUB }, { controlMode: 'explicit', startupModels: ['*'] });
    await repo.start();
    expect(repo.models('simple').map((m) => m.info.version)).toEqual(['2']);
    const first = repo.get('simple');
    await repo.load('simple', { config: JSON.stringify({ name: 'simple', max_batch_size: 2, version_policy: { all: {} } }) });
    expect(repo.models('simple').map((m) => `${m.info.version}:${m.info.maxBatchSize}`)).toEqual(['1:2', '2:2']);
    expect(first.ready()).toBe(false);
    await expect(repo.load('simple', { config: '{"name": "simple", "max_batch_size": "x"}' })).rejects.toThrow(
      expect.objectContaining({ code: 'SF_ERR_MODEL_POLL_FAILED', cause: expect.objectContaining({ code: 'SF_ERR_CONFIG_PARSE' }) }),
    );
    expect(repo.models('simple').map((m) => m.info.version)).toEqual(['1', '2']);
    expect(await addSub(repo, 'simple', '1')).toEqual([range(16, (i) => i + 1), range(16, (i) => i - 1)]);
  });

  it('loads a model from request files in a temporary folder, and refuses paths that leave it', async () => {
    const { root, repo } = repository({}, { controlMode: 'explicit' });
    await repo.start();
    const config = JSON.stringify({ name: 'sent', backend: 'onnxruntime' });
    await repo.load('sent', { config, files: { 'file:1/model.onnx': buildIdentityModel('FP32', ['batch', 3]) } });
    const model = repo.get('sent');
    expect(model.info.maxBatchSize).toBe(4);
    const response = await model.infer({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: Float32Array.from([1, 2, 3]) }] });
    expect(values(response.outputs[0])).toEqual([1, 2, 3]);
    await expect(repo.load('x', { config, files: { 'file:../../escape.onnx': new Uint8Array(1) } })).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_POLL_FAILED', message: expect.stringContaining("has an empty, '.' or '..' segment") }));
    await expect(repo.load('x', { files: { 'file:1/model.onnx': new Uint8Array(1) } })).rejects.toThrow("load of 'x': file parameters replace the model folder, so a config parameter must come with them");
    for (const name of ['..', '../simple', 'a/b', '']) {
      await expect(repo.load(name)).rejects.toThrow(`'${name}' is not a model name: a model name is the name of one folder in the repository`);
    }
    await expect(repo.load('missing')).rejects.toThrow(`Model repository '${root}' is invalid: it has no model folder 'missing' (${join(root, 'missing')})`);
  });

  it("refuses a model it cannot read from the repository in Triton's words (its model-control examples match them), the reason after them", async () => {
    const { root, repo } = repository({ 'simple/1/model.onnx': ADD_SUB }, { controlMode: 'explicit' });
    await repo.start();
    const missing = await repo.load('wrong_model_name').catch((err: unknown) => err);
    expect(missing).toMatchObject({
      code: 'SF_ERR_MODEL_POLL_FAILED',
      statusCode: 400,
      message: `failed to load 'wrong_model_name', failed to poll from model repository: Model repository '${root}' is invalid: it has no model folder 'wrong_model_name' (${join(root, 'wrong_model_name')})`,
      cause: expect.objectContaining({ code: 'SF_ERR_REPOSITORY_INVALID' }),
    });
    const badJson = await repo.load('simple', { config: '"parameters": {"config": {{"max_batch_size": "16"}}}' }).catch((err: unknown) => err);
    expect(badJson).toMatchObject({ code: 'SF_ERR_MODEL_POLL_FAILED', statusCode: 400, cause: expect.objectContaining({ code: 'SF_ERR_CONFIG_INVALID' }) });
    expect((badJson as Error).message).toMatch(/^failed to load 'simple', failed to poll from model repository: Model configuration for 'simple' is invalid: the config parameter is not valid JSON: /);
  });

  it('refuses a config asking for more instances than the ceiling: 400 on a load request, a failed start at startup', async () => {
    const { repo } = repository({ 'simple/1/model.onnx': ADD_SUB }, { controlMode: 'explicit', maxInstances: 2 });
    await repo.start();
    const tooMany = JSON.stringify({ name: 'simple', instance_group: [{ count: 3, kind: 'KIND_CPU' }] });
    await expect(repo.load('simple', { config: tooMany })).rejects.toThrow(expect.objectContaining({
      code: 'SF_ERR_CONFIG_INVALID', statusCode: 400, message: expect.stringContaining('instance_group asks for 3 instances (3); this server runs at most 2 per model version'),
    }));
    await repo.load('simple', { config: JSON.stringify({ name: 'simple', instance_group: [{ count: 2, kind: 'KIND_CPU' }] }) });
    expect(repo.get('simple').ready()).toBe(true);

    const { repo: atStart } = repository({ 'simple/config.pbtxt': `${SIMPLE_CONFIG}instance_group [ { count: 16 kind: KIND_CPU } ]`, 'simple/1/model.onnx': ADD_SUB });
    await expect(atStart.start()).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_CONFIG_INVALID', message: expect.stringContaining('asks for 16 instances (16); this server runs at most 8') }));
  });

  it('refuses to reload an ensemble whose only step is itself, and the loaded one serves on', async () => {
    const { repo } = repository({
      'a_pipeline/config.pbtxt': ENSEMBLE,
      'z_simple/config.pbtxt': SIMPLE_CONFIG.replace('"simple"', '"z_simple"'),
      'z_simple/1/model.onnx': ADD_SUB,
    }, { controlMode: 'explicit', startupModels: ['*'] });
    await repo.start();
    const selfStep = {
      name: 'a_pipeline', platform: 'ensemble', max_batch_size: 8,
      input: [{ name: 'X', data_type: 'TYPE_INT32', dims: [16] }], output: [{ name: 'Y', data_type: 'TYPE_INT32', dims: [16] }],
      ensemble_scheduling: { step: [{ model_name: 'a_pipeline', model_version: -1, input_map: { X: 'X' }, output_map: { Y: 'Y' } }] },
    };
    await expect(repo.load('a_pipeline', { config: JSON.stringify(selfStep) })).rejects.toThrow(expect.objectContaining({
      code: 'SF_ERR_ENSEMBLE_INVALID', statusCode: 400, message: "Ensemble 'a_pipeline' is invalid: step 0 (model 'a_pipeline') runs the ensemble itself",
    }));
    expect(repo.get('a_pipeline').ready()).toBe(true);
    const response = await repo.get('a_pipeline').infer({ inputs: [int32('X', [1, 16], range(16))] });
    expect(values(response.outputs[0])).toEqual(range(16, (i) => 2 * i));
  });

  it('refuses a file name over NAME_MAX and a path 2,000 levels deep as bad requests, writing nothing, and serves on', async () => {
    const { repo } = repository({ 'simple/1/model.onnx': ADD_SUB }, { controlMode: 'explicit', startupModels: ['simple'] });
    await repo.start();
    const before = overrideFolders();
    for (const key of [`file:1/${'A'.repeat(5000)}`, `file:1/${'A'.repeat(256)}`, `file:${'d/'.repeat(2000)}f`]) {
      const err = await repo.load('simple', { config: '{}', files: { [key]: new Uint8Array(1) } }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'SF_ERR_MODEL_POLL_FAILED', statusCode: 400, cause: expect.objectContaining({ code: 'SF_ERR_BAD_REQUEST' }) });
    }
    expect(overrideFolders()).toEqual(before);
    expect(repo.get('simple').ready()).toBe(true);
    await expect(repo.load('n'.repeat(256))).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_BAD_REQUEST', message: expect.stringContaining('is not a model name') }));
  });

  it('answers a sent model file the backend cannot load (4 MiB of noise) 400 with the backend reason, removing its folder', async () => {
    const { repo } = repository({}, { controlMode: 'explicit' });
    await repo.start();
    const before = overrideFolders();
    const noise = new Uint8Array(4 * 1024 * 1024).fill(7);
    const config = JSON.stringify({ name: 'sent', backend: 'onnxruntime' });
    const err = await repo.load('sent', { config, files: { 'file:1/model.onnx': noise } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SF_ERR_MODEL_LOAD_FAILED', statusCode: 400, cause: expect.objectContaining({ code: 'SF_ERR_BACKEND_LOAD_FAILED' }) });
    expect((err as Error).message).toMatch(/^load failed for model 'sent': Backend 'onnxruntime' could not load 'sent\/1\/model.onnx': /);
    expect((err as Error).message).not.toContain(tmpdir());
    expect(overrideFolders()).toEqual(before);
  });

  it('removes the temporary folder of sent files on reload, unload and close', async () => {
    const { repo } = repository({}, { controlMode: 'explicit' });
    await repo.start();
    const before = overrideFolders();
    const config = JSON.stringify({ name: 'sent', backend: 'onnxruntime' });
    const files = { 'file:1/model.onnx': buildIdentityModel('FP32', ['batch', 3]), [`file:${'d/'.repeat(31)}f`]: new Uint8Array(1) };
    await repo.load('sent', { config, files });
    const first = overrideFolders().filter((f) => !before.includes(f));
    expect(first).toHaveLength(1);
    await repo.load('sent', { config, files });
    const second = overrideFolders().filter((f) => !before.includes(f));
    expect(second).toHaveLength(1);
    expect(second).not.toEqual(first);
    await repo.unload('sent');
    expect(overrideFolders()).toEqual(before);
    await repo.load('sent', { config, files });
    await repo.close();
    expect(overrideFolders()).toEqual(before);
  });
});

describe('FolderModelRepository in poll mode', () => {
  it('loads new, reloads changed and unloads removed models on each poll, keeping old versions on a failed reload', async () => {
    const { root, repo } = repository({ 'simple/1/model.onnx': ADD_SUB }, { controlMode: 'poll', pollIntervalMs: 3_600_000 });
    await repo.start();
    writeFiles(root, { 'added/1/model.onnx': ADD_SUB, 'simple/2/model.onnx': ADD_SUB });
    await repo.poll();
    expect(repo.models().map((m) => `${m.info.name}:${m.info.version}`)).toEqual(['added:1', 'simple:2']);

    writeFiles(root, { 'simple/config.pbtxt': 'max_batch_size: [' });
    await repo.poll();
    expect(repo.models('simple').map((m) => m.info.version)).toEqual(['2']);
    expect(repo.get('simple').ready()).toBe(true);

    rmSync(join(root, 'added'), { recursive: true });
    await repo.poll();
    expect((await repo.index()).map((e) => e.name)).toEqual(['simple']);
    await expect(repo.load('added')).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_CONTROL_DISABLED' }));
  });
});

/** The temporary model folders; privateTmpdir() keeps other test runs' folders out of them. */
function overrideFolders(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith('serve-fn-model-')).sort();
}
