import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildAddSubModel, buildIdentityModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import type { InferResponse } from '../../src/inference/inference-model.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { FolderModelRepository } from '../../src/model-repository/folder-model-repository.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import { int32, range, scratchFolder, SIMPLE_CONFIG, values, writeFiles } from '../fixtures/repository/repository-files.js';

/** model.ts files re-export the test fixtures, so the repository can live in a temporary folder. */
const reexport = (fixture: string): string => `export { default } from '${new URL(`../fixtures/repository/${fixture}`, import.meta.url).href}';\n`;

/** FP32 OUTPUT0 = INPUT0 + `constant`, [batch, 3]: each version of `versioned` adds its own number. */
const addConstant = (constant: number): Uint8Array => buildOnnxModel({
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['batch', 3] }],
  outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: ['batch', 3] }],
  nodes: [{ op: 'Add', inputs: ['INPUT0', 'C'], outputs: ['OUTPUT0'] }],
  initializers: [{ name: 'C', datatype: 'FP32', shape: [1], data: [constant] }],
});

const SCALE_IO = `
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 2 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]`;

const root = scratchFolder('repository-it');
writeFiles(root, {
  'simple/config.pbtxt': SIMPLE_CONFIG,
  'simple/1/model.onnx': buildAddSubModel({ size: 16 }),
  // The batcher counts rows, as Triton's does (4 here, in 3 requests), so the batch goes out without waiting out the delay.
  'batched/config.pbtxt': `${SIMPLE_CONFIG.replace('"simple"', '"batched"')}\ndynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000 }`,
  'batched/1/model.onnx': buildAddSubModel({ size: 16 }),
  'variable/config.pbtxt': 'max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000 }',
  'variable/1/model.onnx': buildIdentityModel('FP32', ['batch', 'n']),
  'versioned/config.pbtxt': 'version_policy { latest { num_versions: 2 } }',
  'versioned/1/model.onnx': addConstant(1),
  'versioned/2/model.onnx': addConstant(2),
  'versioned/3/model.onnx': addConstant(3),
  'scale/config.pbtxt': `backend: "serve-fn"\nparameters { key: "scale" value { string_value: "3" } }\n${SCALE_IO}`,
  'scale/1/model.ts': reexport('scale-model.ts'),
  'counter/config.pbtxt': `max_batch_size: 4
    input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
    output [ { name: "COUNT" data_type: TYPE_INT32 dims: [ 1 ] } ]
    model_warmup [ { name: "zeros" batch_size: 2 count: 3 inputs { key: "IN" value { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } } ]`,
  'counter/1/model.ts': reexport('counter-model.ts'),
  'doubler/config.pbtxt': `max_batch_size: 8
    input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
    output [ { name: "DOUBLED" data_type: TYPE_INT32 dims: [ 16 ] } ]`,
  'doubler/1/model.ts': reexport('doubler-model.ts'),
  'ge/config.pbtxt': 'backend: "npu_ge"',
  'ge/1/model.om': 'not really',
  'trt/config.pbtxt': 'backend: "tensorrt"',
  'trt/1/model.plan': 'not really',
  'noversion/config.pbtxt': 'platform: "onnxruntime_onnx"',
  'badconfig/config.pbtxt': 'name: "badconfig"\nmax_batch_size: 4\ninput [ { name: "X" data_type: TYPE_NOPE } ]',
  'badconfig/1/model.onnx': buildAddSubModel(),
  'wrongio/config.pbtxt': SIMPLE_CONFIG.replace('"simple"', '"wrongio"').replace('dims: [ 16 ] },\n  { name: "INPUT1"', 'dims: [ 8 ] },\n  { name: "INPUT1"'),
  'wrongio/1/model.onnx': buildAddSubModel({ size: 16 }),
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const STARTUP = ['simple', 'batched', 'variable', 'versioned', 'scale', 'counter', 'doubler'];

const addSubInputs = (rows: number, base: number) => [
  int32('INPUT0', [rows, 16], range(rows * 16, (i) => base + i)),
  int32('INPUT1', [rows, 16], range(rows * 16, () => 1)),
];
const outputsOf = (response: InferResponse) => Object.fromEntries(response.outputs.map((t) => [t.name, { shape: t.shape, data: values(t) }]));

describe('a Triton model repository served by ServeFnServer (worker-thread instances)', () => {
  let server: ServeFnServer;
  let repository: FolderModelRepository;

  beforeAll(async () => {
    server = new ServeFnServer({ models: [], repository: { root, controlMode: 'explicit', startupModels: STARTUP }, collectProcessMetrics: false });
    await server.start();
    repository = server.repository!;
  });

  afterAll(() => server?.close());

  it("serves Triton's simple model: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1", async () => {
    const response = await repository.get('simple').infer({ id: 'req-1', inputs: addSubInputs(2, 0) });
    expect(response).toMatchObject({ modelName: 'simple', modelVersion: '1', id: 'req-1' });
    expect(outputsOf(response)).toEqual({
      OUTPUT0: { shape: [2, 16], data: range(32, (i) => i + 1) },
      OUTPUT1: { shape: [2, 16], data: range(32, (i) => i - 1) },
    });
    expect(repository.get('simple').info).toMatchObject({ platform: 'onnxruntime_onnx', maxBatchSize: 8, inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [16] }, { name: 'INPUT1', datatype: 'INT32', shape: [16] }] });
  });

  it('returns only the requested outputs', async () => {
    const response = await repository.get('simple').infer({ inputs: addSubInputs(1, 10), outputs: [{ name: 'OUTPUT1' }] });
    expect(outputsOf(response)).toEqual({ OUTPUT1: { shape: [1, 16], data: range(16, (i) => i + 9) } });
    await expect(repository.get('simple').infer({ inputs: addSubInputs(1, 0), outputs: [{ name: 'OUTPUT9' }] })).rejects.toThrow(
      expect.objectContaining({ code: 'SF_ERR_OUTPUT_UNKNOWN', message: "Unexpected inference output 'OUTPUT9' for model 'simple'." }),
    );
  });

  it('checks inputs against the configuration before queueing', async () => {
    const simple = repository.get('simple');
    await expect(simple.infer({ inputs: [addSubInputs(1, 0)[0]] })).rejects.toThrow("Expected input 'INPUT1' for model 'simple' is missing.");
    await expect(simple.infer({ inputs: [...addSubInputs(1, 0), int32('INPUT2', [1, 16], range(16))] })).rejects.toThrow("Unexpected input 'INPUT2' for model 'simple'.");
    await expect(simple.infer({ inputs: [createTensor('INPUT0', 'FP32', [1, 16], range(16)), addSubInputs(1, 0)[1]] })).rejects.toThrow("Tensor 'INPUT0': expected datatype INT32, got FP32.");
    await expect(simple.infer({ inputs: addSubInputs(9, 0) })).rejects.toThrow("inference request batch-size must be <= 8 for 'simple'");
  });

  it('joins concurrent requests into one execution along dimension 0 and gives each its own rows', async () => {
    const before = server.recorder.statistics('batched', '1').model_stats[0];
    const responses = await Promise.all([
      repository.get('batched').infer({ inputs: addSubInputs(1, 0) }),
      repository.get('batched').infer({ inputs: addSubInputs(2, 100) }),
      repository.get('batched').infer({ inputs: addSubInputs(1, 1000) }),
    ]);
    expect(responses.map((r) => outputsOf(r).OUTPUT0)).toEqual([
      { shape: [1, 16], data: range(16, (i) => i + 1) },
      { shape: [2, 16], data: range(32, (i) => 101 + i) },
      { shape: [1, 16], data: range(16, (i) => 1001 + i) },
    ]);
    const after = server.recorder.statistics('batched', '1').model_stats[0];
    expect(after.execution_count - before.execution_count).toBe(1);
    expect(after.inference_count - before.inference_count).toBe(4);
  });

  it('never batches requests whose shapes differ beyond dimension 0: a request of another shape closes the pending batch', async () => {
    const input = (rows: number, width: number, base: number) => createTensor('INPUT0', 'FP32', [rows, width], range(rows * width, (i) => base + i));
    const responses = await Promise.all([
      repository.get('variable').infer({ inputs: [input(1, 2, 0)] }),
      repository.get('variable').infer({ inputs: [input(2, 3, 10)] }),
      repository.get('variable').infer({ inputs: [input(1, 2, 20)] }),
      repository.get('variable').infer({ inputs: [input(4, 3, 30)] }),
    ]);
    expect(responses.map((r) => outputsOf(r).OUTPUT0)).toEqual([
      { shape: [1, 2], data: [0, 1] },
      { shape: [2, 3], data: range(6, (i) => 10 + i) },
      { shape: [1, 2], data: [20, 21] },
      { shape: [4, 3], data: range(12, (i) => 30 + i) },
    ]);
    // Interleaved shapes, as Triton sends them: each request closes the batch before it (the last is preferred_batch_size's 4 rows).
    const [stats] = server.recorder.statistics('variable', '1').model_stats;
    expect(stats.execution_count).toBe(4);
    expect(stats.batch_stats.map((b) => [b.batch_size, b.compute_infer.count])).toEqual([[1, 2], [2, 1], [4, 1]]);
  });

  it('serves the versions the policy selects, each with its own model file', async () => {
    expect(repository.models('versioned').map((m) => m.info.version)).toEqual(['2', '3']);
    const run = async (version?: string) => values((await repository.get('versioned', version).infer({ inputs: [createTensor('INPUT0', 'FP32', [1, 3], [0, 10, 20])] })).outputs[0]);
    expect(await run('2')).toEqual([2, 12, 22]);
    expect(await run('3')).toEqual([3, 13, 23]);
    expect(await run()).toEqual([3, 13, 23]);
    expect(() => repository.get('versioned', '1')).toThrow("Request for unknown model: 'versioned' version 1 is not found");
    expect(repository.get('versioned').info.maxBatchSize).toBe(4);
  });

  it('runs a model.ts class: per-request errors fail only their request, with their own status', async () => {
    const scale = repository.get('scale');
    const ask = (value: number, parameters: Record<string, unknown> = {}) =>
      scale.infer({ inputs: [int32('INPUT0', [1, 2], [value, value + 1])], parameters }).then(outputsOf, (err: Error & { statusCode?: number }) => `${err.statusCode}: ${err.message}`);
    const [good, refused, badInput] = await Promise.all([ask(1, { delay_ms: 50 }), ask(2, { fail: 'error' }), ask(3, { fail: 'status' })]);
    expect(good).toMatchObject({ OUTPUT0: { shape: [1, 2], data: [3, 6] } });
    expect(refused).toBe("500: Model 'scale' failed in execute: request undefined refused");
    expect(badInput).toBe('400: values must be positive');
    expect(await ask(1, { fail: 'unknown-output' })).toBe("500: Model 'scale' failed in execute: returned output 'EXTRA', which config.pbtxt does not declare");
    expect(scale.info.platform).toBe('serve-fn');
  });

  it('runs model_warmup on the instance before the model is ready', async () => {
    const counter = repository.get('counter');
    expect(counter.ready()).toBe(true);
    const response = await counter.infer({ inputs: [int32('IN', [1, 1], [0])] });
    // 3 runs of 2 warmup requests went first.
    expect(values(response.outputs[0])).toEqual([7]);
  });

  it('answers ctx.infer calls for repository models through the server', async () => {
    const response = (await server.infer('simple', { inputs: addSubInputs(1, 5), outputs: [{ name: 'OUTPUT0' }] })) as InferResponse;
    expect(values(response.outputs[0])).toEqual(range(16, (i) => i + 6));
  });

  it('lets a model.ts model call another repository model with ctx.infer (BLS)', async () => {
    const response = await repository.get('doubler').infer({ inputs: [int32('INPUT0', [1, 16], range(16))] });
    expect(outputsOf(response)).toEqual({ DOUBLED: { shape: [1, 16], data: range(16, (i) => 2 * i) } });
  });

  it('refuses bad layouts and unsupported backends with errors naming the model or path', async () => {
    const refusal = (name: string) => repository.load(name).then(() => 'loaded', (err: Error & { code: string }) => `${err.code}: ${err.message}`);
    const pollFailed = (name: string) => `SF_ERR_MODEL_POLL_FAILED: failed to load '${name}', failed to poll from model repository:`;
    // npu_ge reads the ONNX file itself (GE parses it); an .om beside it is not what it serves.
    expect(await refusal('ge')).toBe(`${pollFailed('ge')} Model repository '${root}' is invalid: model file ${join(root, 'ge', '1', 'model.onnx')} does not exist`);
    expect(await refusal('trt')).toBe(
      "SF_ERR_BACKEND_UNSUPPORTED: Backend 'tensorrt' is not supported yet: model 'trt': serve-fn serves onnxruntime, npu_om, npu_ge, python (model.py), serve-fn (model.ts) and ensemble models",
    );
    expect(await refusal('noversion')).toBe(`${pollFailed('noversion')} Model repository '${root}' is invalid: model 'noversion' has no version folder: put its model.onnx in ${join(root, 'noversion', '1')}`);
    expect(await refusal('badconfig')).toBe(
      `${pollFailed('badconfig')} ${join(root, 'badconfig', 'config.pbtxt')}:3:32: field 'data_type' expects a DataType value (TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64, TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64, TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16), found 'TYPE_NOPE'`,
    );
    expect(await refusal('wrongio')).toBe(
      `SF_ERR_CONFIG_INVALID: Model configuration for 'wrongio' is invalid: input 'INPUT0' has shape [-1,8] in the configuration, batch dimension included, but [-1,16] in ${join(root, 'wrongio', '1', 'model.onnx')}`,
    );
    expect((await repository.index()).filter((e) => e.state !== 'READY').map((e) => `${e.name}:${e.state}`)).toEqual([
      'badconfig:UNAVAILABLE', 'ge:UNAVAILABLE', 'noversion:UNAVAILABLE', 'trt:UNAVAILABLE', 'wrongio:UNAVAILABLE',
    ]);
  });

  it('loads a model sent as files, and refuses file paths outside its folder', async () => {
    const config = JSON.stringify({ name: 'sent', platform: 'onnxruntime_onnx', max_batch_size: 2 });
    await repository.load('sent', { config, files: { 'file:1/model.onnx': buildIdentityModel('INT32', ['batch', 2]) } });
    expect(values((await repository.get('sent').infer({ inputs: [int32('INPUT0', [1, 2], [4, 5])] })).outputs[0])).toEqual([4, 5]);
    await expect(repository.load('sent', { config, files: { 'file:/etc/model.onnx': new Uint8Array(1) } })).rejects.toThrow(
      "load of 'sent': file parameter 'file:/etc/model.onnx' is not a relative path; name files like 'file:1/model.onnx', inside the model folder",
    );
    await expect(repository.load('../simple')).rejects.toThrow("'../simple' is not a model name");
    expect(repository.get('sent').ready()).toBe(true);
  });

  it('refuses, over the load API, a config that names a model file outside the version folder (400), and serves on', async () => {
    // Triton CVE-2023-31036's class: the config override would run doubler's model.ts as 'wrongio'.
    const config = JSON.stringify({
      name: 'wrongio',
      max_batch_size: 8,
      input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }],
      output: [{ name: 'DOUBLED', data_type: 'TYPE_INT32', dims: [16] }],
      default_model_filename: '../../doubler/1/model.ts',
    });
    const load = await server.app.inject({ method: 'POST', url: '/v2/repository/models/wrongio/load', payload: { parameters: { config } } });
    expect([load.statusCode, load.json()]).toEqual([400, {
      error: `failed to load 'wrongio', failed to poll from model repository: Model configuration for 'wrongio' is invalid: default_model_filename '../../doubler/1/model.ts' is not a file inside the version folder ${join(root, 'wrongio', '1')}`,
      code: 'SF_ERR_MODEL_POLL_FAILED',
    }]);
    const encoded = await server.app.inject({ method: 'POST', url: '/v2/repository/models/..%2Fsimple/load' });
    expect([encoded.statusCode, encoded.json().error]).toEqual([400, "'../simple' is not a model name: a model name is the name of one folder in the repository"]);
    expect(() => repository.get('wrongio')).toThrow("Request for unknown model: 'wrongio' is not found");
    expect(repository.get('simple').ready()).toBe(true);
  });

  it("answers hostile loads over the load API with 400 in KServe's error shape, and serves on", async () => {
    const load = async (name: string, parameters: Record<string, string>) => {
      const res = await server.app.inject({ method: 'POST', url: `/v2/repository/models/${name}/load`, payload: { parameters } });
      return { status: res.statusCode, error: res.json().error as string, code: res.json().code as string };
    };
    const sent = JSON.stringify({ name: 'sent', backend: 'onnxruntime' });
    const file = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
    const deep = await load('sent', { config: sent, [`file:${'d/'.repeat(2000)}f`]: file(new Uint8Array(1)) });
    expect([deep.status, deep.code]).toEqual([400, 'SF_ERR_MODEL_POLL_FAILED']);
    expect(deep.error).toContain('is longer than 1024 bytes');
    const longName = await load('sent', { config: sent, [`file:1/${'n'.repeat(5000)}`]: file(new Uint8Array(1)) });
    expect([longName.status, longName.code]).toEqual([400, 'SF_ERR_MODEL_POLL_FAILED']);
    const noise = await load('sent', { config: sent, 'file:1/model.onnx': file(new Uint8Array(4 * 1024 * 1024).fill(7)) });
    expect([noise.status, noise.code]).toEqual([400, 'SF_ERR_MODEL_LOAD_FAILED']);
    expect(noise.error).toMatch(/^load failed for model 'sent': Backend 'onnxruntime' could not load /);
    const negative = await load('simple', { config: JSON.stringify({ name: 'simple', max_batch_size: -1 }) });
    expect([negative.status, negative.error]).toEqual([400, "failed to load 'simple', failed to poll from model repository: config parameter of 'simple':1:1: field 'max_batch_size' must be 0 or more, got -1"]);
    expect(repository.get('simple').ready()).toBe(true);
  });

  it('unloads a model only after its in-flight requests finish', async () => {
    await repository.load('scale');
    const scale = repository.get('scale');
    const inFlight = scale.infer({ inputs: [int32('INPUT0', [1, 2], [1, 1])], parameters: { delay_ms: 300 } });
    const unloaded = repository.unload('scale');
    await vi.waitFor(() => expect(scale.ready()).toBe(false));
    await expect(scale.infer({ inputs: [int32('INPUT0', [1, 2], [1, 1])] })).rejects.toThrow("Model 'scale' version 1 is not ready");
    expect(values((await inFlight).outputs[0])).toEqual([3, 3]);
    await unloaded;
    expect(() => repository.get('scale')).toThrow("Request for unknown model: 'scale' is not found");
    expect((await repository.index()).find((e) => e.name === 'scale')).toEqual({ name: 'scale', state: 'UNAVAILABLE', reason: 'unloaded' });
  });
});

describe('a repository used without a server', () => {
  it('routes ctx.infer of its model.ts instances to its own models', async () => {
    const standalone = new FolderModelRepository({ root, startupModels: ['simple', 'doubler'], controlMode: 'explicit', recorder: new InferenceRecorder({ collectProcessMetrics: false }) });
    try {
      await standalone.start();
      const response = await standalone.get('doubler').infer({ inputs: [int32('INPUT0', [1, 16], range(16, (i) => i + 1))] });
      expect(values(response.outputs[0])).toEqual(range(16, (i) => 2 * (i + 1)));
    } finally {
      await standalone.close();
    }
  });
});

describe('a repository in poll mode', () => {
  it('loads a model added to the folder on its next scan', async () => {
    const pollRoot = scratchFolder('repository-poll');
    writeFiles(pollRoot, { 'first/1/model.onnx': buildIdentityModel('FP32', ['batch', 2]) });
    const server = new ServeFnServer({ models: [], repository: { root: pollRoot, controlMode: 'poll', pollIntervalMs: 100 }, collectProcessMetrics: false });
    try {
      await server.start();
      writeFiles(pollRoot, { 'second/1/model.onnx': buildIdentityModel('INT32', ['batch', 2]) });
      await vi.waitFor(() => expect(server.repository!.models('second')).toHaveLength(1), { timeout: 20_000, interval: 100 });
      const response = await server.repository!.get('second').infer({ inputs: [int32('INPUT0', [1, 2], [8, 9])] });
      expect(values(response.outputs[0])).toEqual([8, 9]);
    } finally {
      await server.close();
      rmSync(pollRoot, { recursive: true, force: true });
    }
  });
});
