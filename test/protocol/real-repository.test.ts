import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { range } from '../fixtures/repository/repository-files.js';
import { binaryBody, splitResponse } from './protocol-app.js';

/**
 * Triton's classic `simple` and `simple_string` models served from a real repository folder by
 * ServeFnServer (worker-thread instances, ONNX Runtime, a model.ts class), checked with requests
 * written by hand as in Triton's simple_http_infer_client.py / simple_http_string_infer_client.py.
 */

const FIXTURES = fileURLToPath(new URL('../fixtures/protocol-repository', import.meta.url));
// Under test/ (not the OS temporary folder) so the copied model.ts resolves its relative src import.
const root = fileURLToPath(new URL(`../.tmp/protocol-repository-${process.pid}`, import.meta.url));

const SIMPLE_CONFIG = readFileSync(join(FIXTURES, 'simple/config.pbtxt'), 'utf8');
// Triton's simple config with a dynamic batcher that waits (up to 5 s) for 4 requests, so the batch is known.
const BATCHED_CONFIG = `${SIMPLE_CONFIG.replace('name: "simple"', 'name: "simple_batched"')}
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000 }
`;

const IN0 = range(16);
const IN1 = range(16, () => 1);
const SUM = range(16, (i) => i + 1);
const DIFFERENCE = range(16, (i) => i - 1);
const strings = (values: readonly number[]): string[] => values.map(String);

/** INT32 elements little-endian, written with Buffer's own writer, independent of serve-fn's codec. */
function int32Bytes(values: readonly number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeInt32LE(v, i * 4));
  return b;
}

/** BYTES on the wire: each element as a 4-byte little-endian length then its bytes. */
function bytesElements(values: readonly string[]): Buffer {
  return Buffer.concat(values.flatMap((v) => {
    const element = Buffer.from(v, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32LE(element.length);
    return [length, element];
  }));
}

const JSON_INPUTS = (datatype: string, a: unknown[], b: unknown[]): string =>
  `{"name":"INPUT0","shape":[1,16],"datatype":"${datatype}","data":${JSON.stringify(a)}},` +
  `{"name":"INPUT1","shape":[1,16],"datatype":"${datatype}","data":${JSON.stringify(b)}}`;

describe('Triton\'s simple and simple_string from a repository folder, over the v2 HTTP protocol', () => {
  let server: ServeFnServer;

  const post = (model: string, payload: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    server.app.inject({ method: 'POST', url: `/v2/models/${model}/infer`, headers, payload });
  const get = (url: string) => server.app.inject({ method: 'GET', url });

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    cpSync(FIXTURES, root, { recursive: true });
    mkdirSync(join(root, 'simple/1'));
    writeFileSync(join(root, 'simple/1/model.onnx'), buildAddSubModel({ size: 16 }));
    mkdirSync(join(root, 'simple_batched/1'), { recursive: true });
    writeFileSync(join(root, 'simple_batched/config.pbtxt'), BATCHED_CONFIG);
    writeFileSync(join(root, 'simple_batched/1/model.onnx'), buildAddSubModel({ size: 16 }));
    server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
    await server.start();
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('simple, JSON: OUTPUT0 is the sum and OUTPUT1 the difference, with the request id echoed', async () => {
    const res = await post('simple', `{"id":"42","inputs":[${JSON_INPUTS('INT32', IN0, IN1)}]}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json()).toEqual({
      id: '42',
      model_name: 'simple',
      model_version: '1',
      outputs: [
        { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: SUM },
        { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: DIFFERENCE },
      ],
    });
  });

  it('simple, binary: binary inputs and binary outputs, the bytes after the JSON header', async () => {
    const { body, headers } = binaryBody(
      '{"inputs":[' +
        '{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
        '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
        '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}',
      int32Bytes(IN0),
      int32Bytes(IN1),
    );
    const res = await post('simple', body, headers);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    const parts = splitResponse(res);
    expect(parts.json).toBe(
      '{"model_name":"simple","model_version":"1","outputs":[' +
        '{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},' +
        '{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}',
    );
    expect(parts.binary.equals(Buffer.concat([int32Bytes(SUM), int32Bytes(DIFFERENCE)]))).toBe(true);
  });

  it('simple: a requested-output subset answers only that output', async () => {
    const res = await post('simple', `{"inputs":[${JSON_INPUTS('INT32', IN0, IN1)}],"outputs":[{"name":"OUTPUT1"}]}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(
      `{"model_name":"simple","model_version":"1","outputs":[{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":${JSON.stringify(DIFFERENCE)}}]}`,
    );
  });

  it('simple: a batch of two rows in one request', async () => {
    const a = [...IN0, ...range(16, (i) => 100 + i)];
    const b = range(32, () => 1);
    const res = await post('simple', `{"inputs":[` +
      `{"name":"INPUT0","shape":[2,16],"datatype":"INT32","data":${JSON.stringify(a)}},` +
      `{"name":"INPUT1","shape":[2,16],"datatype":"INT32","data":${JSON.stringify(b)}}],"outputs":[{"name":"OUTPUT0"}]}`);
    expect(res.json()).toEqual({
      model_name: 'simple',
      model_version: '1',
      outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [2, 16], data: a.map((v) => v + 1) }],
    });
  });

  it('simple_string, JSON: numbers as strings in, their sum and difference as strings out', async () => {
    const res = await post('simple_string', `{"inputs":[${JSON_INPUTS('BYTES', strings(IN0), strings(IN1))}]}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(
      '{"model_name":"simple_string","model_version":"1","outputs":[' +
        `{"name":"OUTPUT0","datatype":"BYTES","shape":[1,16],"data":${JSON.stringify(strings(SUM))}},` +
        `{"name":"OUTPUT1","datatype":"BYTES","shape":[1,16],"data":${JSON.stringify(strings(DIFFERENCE))}}]}`,
    );
  });

  it('simple_string, binary: length-prefixed BYTES elements both ways, one output asked for', async () => {
    const in0 = bytesElements(strings(IN0));
    const in1 = bytesElements(strings(IN1));
    const out0 = bytesElements(strings(SUM));
    const { body, headers } = binaryBody(
      '{"inputs":[' +
        `{"name":"INPUT0","shape":[1,16],"datatype":"BYTES","parameters":{"binary_data_size":${in0.length}}},` +
        `{"name":"INPUT1","shape":[1,16],"datatype":"BYTES","parameters":{"binary_data_size":${in1.length}}}],` +
        '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}',
      in0,
      in1,
    );
    const res = await post('simple_string', body, headers);
    expect(res.statusCode).toBe(200);
    const parts = splitResponse(res);
    expect(parts.json).toBe(
      `{"model_name":"simple_string","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"BYTES","shape":[1,16],"parameters":{"binary_data_size":${out0.length}}}]}`,
    );
    expect(parts.binary.equals(out0)).toBe(true);
  });

  it('simple_string: an element that is not a number fails the request with the model\'s 400', async () => {
    const res = await post('simple_string', `{"inputs":[${JSON_INPUTS('BYTES', strings(IN0), [...strings(IN1).slice(1), 'one'])}]}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: "simple_string: INPUT1 element 'one' is not an integer", code: 'SF_ERR_BAD_REQUEST' });
  });

  it('model metadata, as Triton answers it (batch dimension -1)', async () => {
    const tensors = (datatype: string, ...names: string[]) => names.map((name) => ({ name, datatype, shape: [-1, 16] }));
    expect((await get('/v2/models/simple')).json()).toEqual({
      name: 'simple',
      versions: ['1'],
      platform: 'onnxruntime_onnx',
      inputs: tensors('INT32', 'INPUT0', 'INPUT1'),
      outputs: tensors('INT32', 'OUTPUT0', 'OUTPUT1'),
    });
    // serve-fn names the runner of a model.ts model 'serve-fn', where Triton would say 'python'.
    expect((await get('/v2/models/simple_string/versions/1')).json()).toEqual({
      name: 'simple_string',
      versions: ['1'],
      platform: 'serve-fn',
      inputs: tensors('BYTES', 'INPUT0', 'INPUT1'),
      outputs: tensors('BYTES', 'OUTPUT0', 'OUTPUT1'),
    });
    expect((await get('/v2/models/simple/ready')).statusCode).toBe(200);
  });

  it('model config, Triton\'s ModelConfig JSON', async () => {
    const simple = (await get('/v2/models/simple/config')).json();
    expect(simple).toMatchObject({ name: 'simple', platform: 'onnxruntime_onnx', backend: 'onnxruntime', max_batch_size: 8, version_policy: { latest: { num_versions: 1 } } });
    const input = (name: string) => ({
      name, data_type: 'TYPE_INT32', format: 'FORMAT_NONE', dims: [16], is_shape_tensor: false, allow_ragged_batch: false, optional: false, is_non_linear_format_io: false,
    });
    const output = (name: string) => ({ name, data_type: 'TYPE_INT32', dims: [16], label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false });
    expect(simple.input).toEqual([input('INPUT0'), input('INPUT1')]);
    expect(simple.output).toEqual([output('OUTPUT0'), output('OUTPUT1')]);
    const string = (await get('/v2/models/simple_string/config')).json();
    // The model.ts class runs in place of Triton's Python backend, and the config says which runs.
    expect(string).toMatchObject({ name: 'simple_string', platform: '', backend: 'serve-fn', max_batch_size: 8 });
    expect(string.input.map((i: { data_type: string }) => i.data_type)).toEqual(['TYPE_STRING', 'TYPE_STRING']);
  });

  it('statistics count executions and inferences; concurrent requests batch (execution_count < inference_count)', async () => {
    const request = (base: number) => `{"inputs":[${JSON_INPUTS('INT32', range(16, (i) => base + i), IN1)}],"outputs":[{"name":"OUTPUT0"}]}`;
    const answers = await Promise.all([0, 100, 200, 300].map((base) => post('simple_batched', request(base))));
    expect(answers.map((res) => res.json().outputs[0].data)).toEqual([0, 100, 200, 300].map((base) => range(16, (i) => base + i + 1)));

    const res = await get('/v2/models/simple_batched/stats');
    expect(res.statusCode).toBe(200);
    const [stats] = res.json().model_stats;
    expect(stats).toMatchObject({ name: 'simple_batched', version: '1', inference_count: 4, execution_count: 1 });
    expect(stats.inference_stats.success.count).toBe(4);
    expect(stats.inference_stats.fail.count).toBe(0);
    expect(stats.batch_stats.map((b: { batch_size: number; compute_infer: { count: number } }) => [b.batch_size, b.compute_infer.count])).toEqual([[4, 1]]);
  });

  it('a wrong datatype is a 400 naming the tensor', async () => {
    const res = await post('simple', `{"inputs":[${JSON_INPUTS('FP32', IN0, IN1)}]}`);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: "Tensor 'INPUT0': expected datatype INT32, got FP32.", code: 'SF_ERR_TENSOR_DATATYPE' });
  });

  it('an unknown model is a 404 with Triton\'s text', async () => {
    const res = await post('simplex', `{"inputs":[${JSON_INPUTS('INT32', IN0, IN1)}]}`);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: "Request for unknown model: 'simplex' is not found", code: 'SF_ERR_MODEL_UNKNOWN' });
    expect((await get('/v2/models/simplex')).json()).toEqual({ error: "Request for unknown model: 'simplex' is not found", code: 'SF_ERR_MODEL_UNKNOWN' });
  });
});
