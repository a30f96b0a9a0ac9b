import { status } from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { DoublerCallerModel, DoublerModel, InlineDoublerModel } from '../fixtures/models/tensor-models.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';
import { metricsCounts, statisticsCounts } from '../helpers/statistics-and-metrics.js';
import { listeningServer } from './listening-server.js';
import { call, exchange, failure, inferenceMethod } from './grpc-raw.js';
import { binaryBody, splitResponse } from './protocol-app.js';
import { messages, packedInt64, parse, pb, rawBytes, strings } from './protobuf-wire.js';

const floats = (values: number[]): Buffer => {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeFloatLE(v, i * 4));
  return b;
};
const readFloats = (b: Buffer): number[] => Array.from({ length: b.length / 4 }, (_, i) => b.readFloatLE(i * 4));

/** A repository ensemble whose two steps are the decorated doubler's tensor interface. */
const TWICE_DOUBLED = `
platform: "ensemble"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling { step [
  { model_name: "doubler" model_version: -1 input_map { key: "INPUT0" value: "X" } output_map { key: "OUTPUT0" value: "once" } },
  { model_name: "doubler" model_version: -1 input_map { key: "INPUT0" value: "once" } output_map { key: "OUTPUT0" value: "Y" } }
] }`;

const REQUEST = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }], outputs: [{ name: 'OUTPUT0' }] };

describe('a decorated model with a @Tensors interface, on HTTP /v2, gRPC and ctx.infer', () => {
  const root = scratchFolder('decorated-tensor-models');
  writeFiles(root, { 'twice_doubled/config.pbtxt': TWICE_DOUBLED, 'twice_doubled/1/.keep': '' });
  const { server, grpc, inject } = listeningServer({
    models: [DoublerModel, DoublerCallerModel],
    moduleUrl: new URL('../fixtures/models/tensor-models.ts', import.meta.url).href,
    repository: { root },
  }, root);

  it('lists the declared inputs and outputs in /v2 metadata, with the batch dimension as -1', async () => {
    expect((await inject('GET', '/v2/models/doubler')).json()).toEqual({
      name: 'doubler',
      versions: ['1'],
      platform: 'serve-fn',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [-1, -1] },
        { name: 'OFFSET', datatype: 'FP32', shape: [-1, 1] },
      ],
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: [-1, -1] },
        { name: 'INSTANCE', datatype: 'BYTES', shape: [-1, 1] },
      ],
    });
  });

  it('answers a Triton-shaped configuration with the tensors, max_batch_size and the dynamic batching of execute', async () => {
    const config = (await inject('GET', '/v2/models/doubler/config')).json();
    expect(config).toMatchObject({
      max_batch_size: 4,
      input: [
        { name: 'INPUT0', data_type: 'TYPE_FP32', format: 'FORMAT_NONE', dims: [-1], is_shape_tensor: false, allow_ragged_batch: false, optional: false },
        { name: 'OFFSET', data_type: 'TYPE_FP32', format: 'FORMAT_NONE', dims: [1], is_shape_tensor: false, allow_ragged_batch: false, optional: true },
      ],
      output: [
        { name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1], label_filename: '', is_shape_tensor: false },
        { name: 'INSTANCE', data_type: 'TYPE_STRING', dims: [1], label_filename: '', is_shape_tensor: false },
      ],
      dynamic_batching: { max_queue_delay_microseconds: 20_000 },
      parameters: { endpoints: { string_value: 'POST /double' } },
    });
  });

  it('answers JSON infer with what the class route answers, run by the same instance', async () => {
    const route = (await inject('POST', '/double', { values: [1, 2, 3] })).json();
    const res = await inject('POST', '/v2/models/doubler/infer', { ...REQUEST, id: 'r1', outputs: [{ name: 'OUTPUT0' }, { name: 'INSTANCE' }] });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ model_name: 'doubler', model_version: '1', id: 'r1', parameters: { batch: 1 } });
    expect(body.outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [1, 3], data: route.values },
      { name: 'INSTANCE', datatype: 'BYTES', shape: [1, 1], data: [route.instance] },
    ]);
  });

  it('answers binary infer, with the optional input given', async () => {
    const header = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [2, 2], parameters: { binary_data_size: 16 } },
        { name: 'OFFSET', datatype: 'FP32', shape: [2, 1], parameters: { binary_data_size: 8 } },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    });
    const { body, headers } = binaryBody(header, floats([1, 2, 3, 4]), floats([0.5, 0.5]));
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/doubler/infer', payload: body, headers });
    expect(res.statusCode).toBe(200);
    const parts = splitResponse(res);
    expect(JSON.parse(parts.json).outputs).toEqual([{ name: 'OUTPUT0', datatype: 'FP32', shape: [2, 2], parameters: { binary_data_size: 16 } }]);
    expect(readFloats(parts.binary)).toEqual([2.5, 4.5, 6.5, 8.5]);
  });

  it('refuses bad tensor requests with the same 400s as a repository model, and keeps serving', async () => {
    const cases: [unknown, string, string][] = [
      [{ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: [1] }] }, 'SF_ERR_TENSOR_DATATYPE', 'INPUT0'],
      [{ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [3], data: [1, 2, 3] }] }, 'SF_ERR_TENSOR_SHAPE', 'INPUT0'],
      [{ inputs: [{ name: 'OFFSET', datatype: 'FP32', shape: [1, 1], data: [1] }] }, 'SF_ERR_TENSOR_MISSING', 'INPUT0'],
      [{ inputs: [...REQUEST.inputs, { name: 'EXTRA', datatype: 'FP32', shape: [1, 1], data: [1] }] }, 'SF_ERR_TENSOR_UNEXPECTED', 'EXTRA'],
      [{ ...REQUEST, outputs: [{ name: 'GHOST' }] }, 'SF_ERR_OUTPUT_UNKNOWN', 'GHOST'],
      [{ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [5, 1], data: [1, 2, 3, 4, 5] }] }, 'SF_ERR_BAD_REQUEST', 'batch-size must be <= 4'],
      [{ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 0], data: [] }] }, 'SF_ERR_TENSOR_DATA', 'has an empty dimension (index 1)'],
      [{ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [0, 3], data: [] }] }, 'SF_ERR_TENSOR_DATA', 'has a batch of 0 rows'],
    ];
    for (const [payload, code, named] of cases) {
      const res = await inject('POST', '/v2/models/doubler/infer', payload);
      expect([res.statusCode, res.json().code], code).toEqual([400, code]);
      expect(res.json().error).toContain(named);
    }
    const failed = await inject('POST', '/v2/models/doubler/infer', { ...REQUEST, parameters: { fail: true } });
    expect([failed.statusCode, failed.json().code]).toEqual([500, 'SF_ERR_EXECUTION_FAILED']);
    expect((await inject('POST', '/v2/models/doubler/infer', REQUEST)).json().outputs[0].data).toEqual([2, 4, 6]);
  });

  it('runs gRPC ModelInfer on the same interface', async () => {
    const request = Buffer.concat([
      pb.string(1, 'doubler'),
      pb.message(5, pb.string(1, 'INPUT0'), pb.string(2, 'FP32'), pb.packedVarints(3, [1, 2])),
      pb.message(6, pb.string(1, 'OUTPUT0')),
      pb.bytes(7, floats([5, -1])),
    ]);
    const res = parse(await call(grpc(), 'ModelInfer', request));
    expect([strings(res, 1), strings(res, 2)]).toEqual([['doubler'], ['1']]);
    expect(messages(res, 5).map((o) => [strings(o, 1)[0], strings(o, 2)[0], packedInt64(o, 3)])).toEqual([['OUTPUT0', 'FP32', [1, 2]]]);
    expect(readFloats(rawBytes(res, 6)[0])).toEqual([10, -2]);
  });

  it('answers gRPC ModelInfer with an empty dimension INVALID_ARGUMENT', async () => {
    const request = Buffer.concat([pb.string(1, 'doubler'), pb.message(5, pb.string(1, 'INPUT0'), pb.string(2, 'FP32'), pb.packedVarints(3, [1, 0])), pb.bytes(7, Buffer.alloc(0))]);
    expect(await failure(call(grpc(), 'ModelInfer', request))).toEqual([status.INVALID_ARGUMENT, "Tensor 'INPUT0': shape [1,0] has an empty dimension (index 1); model 'doubler' takes no empty input there."]);
  });

  it('runs gRPC ModelStreamInfer on the same interface, a bad request answered in error_message', async () => {
    const request = (id: string, shape: number[], values: number[]): Buffer =>
      Buffer.concat([
        pb.string(1, 'doubler'),
        pb.string(3, id),
        pb.message(5, pb.string(1, 'INPUT0'), pb.string(2, 'FP32'), pb.packedVarints(3, shape)),
        pb.message(6, pb.string(1, 'OUTPUT0')),
        pb.bytes(7, floats(values)),
      ]);
    const answers = (await exchange(grpc(), inferenceMethod('ModelStreamInfer'), [request('a', [1, 1], [3]), request('b', [1], [1])])).map(parse);
    const ok = answers.filter((a) => (strings(a, 1)[0] ?? '') === '').map((a) => messages(a, 2)[0]);
    expect(ok.map((r) => [strings(r, 3)[0], readFloats(rawBytes(r, 6)[0])])).toEqual([['a', [6]]]);
    expect(answers.filter((a) => (strings(a, 1)[0] ?? '') !== '').map((a) => strings(a, 1)[0])).toEqual([
      expect.stringContaining("'INPUT0'"),
    ]);
  });

  it('answers ctx.infer from another model with method execute', async () => {
    const res = await inject('POST', '/call-doubler', { values: [0.5, 4] });
    expect([res.statusCode, res.json()]).toEqual([200, { values: [1, 8] }]);
  });

  it('runs a repository ensemble whose steps are the decorated model, counting each step in its statistics', async () => {
    const before = (await statisticsCounts(server.app))['doubler:1'];
    const res = await inject('POST', '/v2/models/twice_doubled/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: [1, -3] }] });
    expect([res.statusCode, res.json().outputs]).toEqual([200, [{ name: 'Y', datatype: 'FP32', shape: [1, 2], data: [4, -12] }]]);
    expect((await statisticsCounts(server.app))['doubler:1'].success).toBe(before.success + 2);
  });

  it('batches concurrent tensor requests into one execute, and counts them with the route requests in the same statistics', async () => {
    const before = await statisticsCounts(server.app);
    const answers = await Promise.all([
      ...[1, 2, 3, 4].map((v) => inject('POST', '/v2/models/doubler/infer', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], data: [v] }] })),
      inject('POST', '/double', { values: [7] }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
    const tensorAnswers = answers.slice(0, 4).map((a) => a.json());
    expect(tensorAnswers.map((a) => a.outputs[0].data)).toEqual([[2], [4], [6], [8]]);
    // Every batch reports how many requests its execute call held; together they are the four.
    const batches = tensorAnswers.map((a) => a.parameters.batch as number);
    expect(batches.every((n) => n >= 1 && n <= 4)).toBe(true);
    const ids = new Set([...tensorAnswers.map((a) => a.outputs[1].data[0]), answers[4].json().instance]);
    expect(ids.size).toBe(1);

    const after = await statisticsCounts(server.app);
    expect(after).toEqual(await metricsCounts(server.app));
    expect(after['doubler:1']).toEqual({ success: before['doubler:1'].success + 5, failure: before['doubler:1'].failure });
  });
});

describe('a @Tensors model on an inline instance', () => {
  const server = new ServeFnServer({ models: [InlineDoublerModel], logger: false, collectProcessMetrics: false });
  afterAll(() => server.close());

  it('runs the tensor call on the HTTP thread as a worker runs it', async () => {
    await server.start();
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/inline-doubler/infer', payload: { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, -1] }] } });
    expect([res.statusCode, res.json().outputs]).toEqual([200, [{ name: 'OUTPUT0', datatype: 'FP32', shape: [2], data: [2, -2] }]]);
  });
});
