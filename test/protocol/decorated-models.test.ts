import { status } from '@grpc/grpc-js';
import { IsString } from 'class-validator';
import { afterAll, describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model, WebSocketEndpoint } from '../../src/index.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { FragileModel } from '../fixtures/models/fragile-model.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';
import { metricsCounts, statisticsCounts } from '../helpers/statistics-and-metrics.js';
import { listeningServer } from './listening-server.js';
import { call, failure } from './grpc-raw.js';
import { messages, parse, pb, strings } from './protobuf-wire.js';

class EchoBody {
  @IsString() text!: string;
}

@Model({ name: 'echo', version: '3' })
@Instances(2, { inline: true })
class EchoModel {
  @Endpoint('/echo', { body: EchoBody })
  async echo(request: EchoBody): Promise<{ text: string }> {
    if (request.text === 'fail') throw new Error('refused');
    return { text: request.text };
  }

  @Endpoint('/echo/many', { body: EchoBody })
  @Batch({ maxBatchSize: 8, maxQueueDelayUs: 2000, priorityLevels: 2, defaultQueuePolicy: { maxQueueSize: 16 } })
  async many(batch: EchoBody[]): Promise<{ text: string; batch: number }[]> {
    return batch.map((r) => ({ text: r.text, batch: batch.length }));
  }

  @Endpoint('/echo/few', { body: EchoBody })
  @Batch(2)
  async few(batch: EchoBody[]): Promise<{ text: string }[]> {
    return batch.map((r) => ({ text: r.text }));
  }

  @WebSocketEndpoint('/echo/ws')
  async *talk(messages: AsyncIterable<unknown>): AsyncGenerator<unknown> {
    for await (const message of messages) yield message;
  }
}

const SCALE_MODEL = new URL('../fixtures/repository/scale-model.ts', import.meta.url).href;
const SCALE_FILES = {
  'scale/config.pbtxt': `backend: "serve-fn"
    max_batch_size: 8
    input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] } ]
    output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 2 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]
    instance_group [ { count: 1 kind: KIND_CPU } ]`,
  'scale/1/model.ts': `export { default } from '${SCALE_MODEL}';\n`,
};
const SCALE_REQUEST = { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: [1, 2] }] };
const NO_TENSORS = "Model 'echo' declares no tensor interface (no @Tensors inputs or outputs and execute method), so it cannot run KServe v2 inference requests: call its endpoints (POST /echo, POST /echo/many, POST /echo/few, WEBSOCKET /echo/ws).";

describe('decorated models on the KServe v2 protocol, beside a repository model', () => {
  const root = scratchFolder('decorated-models');
  writeFiles(root, SCALE_FILES);
  const { server, grpc, inject } = listeningServer({
    models: [EchoModel],
    repository: { root, controlMode: 'explicit', startupModels: ['scale'] },
  }, root);

  it('lists the decorated model in the repository index, with metadata and readiness', async () => {
    expect((await inject('POST', '/v2/repository/index')).json()).toEqual([
      { name: 'echo', version: '3', state: 'READY' },
      { name: 'scale', version: '1', state: 'READY' },
    ]);
    const metadata = { name: 'echo', versions: ['3'], platform: 'serve-fn', inputs: [], outputs: [] };
    expect((await inject('GET', '/v2/models/echo')).json()).toEqual(metadata);
    expect((await inject('GET', '/v2/models/echo/versions/3')).json()).toEqual(metadata);
    expect((await inject('GET', '/v2/models/echo/ready')).statusCode).toBe(200);
    expect((await inject('GET', '/v2/models/echo/versions/3/ready')).statusCode).toBe(200);
    const wrongVersion = await inject('GET', '/v2/models/echo/versions/4');
    expect([wrongVersion.statusCode, wrongVersion.json()]).toEqual([404, { error: "Request for unknown model: 'echo' version 4 is not found", code: 'SF_ERR_MODEL_VERSION_UNKNOWN' }]);
    expect((await inject('GET', '/v2/health/ready')).statusCode).toBe(200);
  });

  it('answers a Triton-shaped configuration derived from @Instances and the largest @Batch', async () => {
    expect((await inject('GET', '/v2/models/echo/config')).json()).toEqual({
      name: 'echo',
      platform: 'serve-fn',
      backend: 'serve-fn',
      version_policy: { specific: { versions: [3] } },
      max_batch_size: 8,
      input: [],
      output: [],
      instance_group: [{ name: 'echo', count: 2, kind: 'KIND_CPU', gpus: [] }],
      dynamic_batching: {
        preferred_batch_size: [],
        max_queue_delay_microseconds: 2000,
        preserve_ordering: false,
        priority_levels: 2,
        default_priority_level: 2,
        default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 16 },
        priority_queue_policy: {},
      },
      parameters: { endpoints: { string_value: 'POST /echo, POST /echo/many, POST /echo/few, WEBSOCKET /echo/ws' } },
    });
  });

  it('answers infer and generate on the decorated model with 400 naming what is missing, and keeps serving', async () => {
    for (const url of ['/v2/models/echo/infer', '/v2/models/echo/versions/3/infer', '/v2/models/echo/generate', '/v2/models/echo/generate_stream']) {
      const res = await inject('POST', url, { inputs: [{ name: 'text', datatype: 'BYTES', shape: [1], data: ['hi'] }] });
      expect([res.statusCode, res.json()], url).toEqual([400, { error: NO_TENSORS, code: 'SF_ERR_MODEL_NO_TENSOR_INTERFACE' }]);
    }
    expect((await inject('POST', '/echo', { text: 'still here' })).json()).toEqual({ text: 'still here' });
    expect((await inject('POST', '/v2/models/scale/infer', SCALE_REQUEST)).statusCode).toBe(200);
  });

  it('gives the OpenAPI infer route examples for the models that take tensors only', async () => {
    const doc = (await server.openapi()) as { paths: Record<string, { post: { requestBody: { content: Record<string, { examples: Record<string, unknown> }> } } }> };
    expect(Object.keys(doc.paths['/v2/models/{model}/infer'].post.requestBody.content['application/json'].examples)).toEqual(['scale_v1']);
  });

  it('serves the same model over gRPC: metadata, and ModelInfer refused with INVALID_ARGUMENT', async () => {
    const res = parse(await call(grpc(), 'ModelMetadata', pb.string(1, 'echo')));
    expect([strings(res, 1), strings(res, 2), strings(res, 3), messages(res, 4), messages(res, 5)]).toEqual([['echo'], ['3'], ['serve-fn'], [], []]);
    expect(await failure(call(grpc(), 'ModelInfer', pb.string(1, 'echo')))).toEqual([status.INVALID_ARGUMENT, NO_TENSORS]);
    expect(parse(await call(grpc(), 'ModelReady', pb.string(1, 'echo'))).get(1)?.[0]?.value).toBe(1n);
  });

  it('refuses load and unload of the decorated model with 400, as Triton refuses a model it cannot control', async () => {
    for (const action of ['load', 'unload']) {
      const res = await inject('POST', `/v2/repository/models/echo/${action}`);
      expect([res.statusCode, res.json()], action).toEqual([
        400,
        { error: "Model 'echo' is served by its @Model class, not from the model repository: it cannot be loaded or unloaded while the server runs.", code: 'SF_ERR_MODEL_NOT_IN_REPOSITORY' },
      ]);
    }
    expect((await inject('GET', '/v2/models/echo/ready')).statusCode).toBe(200);
  });

  it('counts in /v2/models/stats what /metrics counts, for the decorated and the repository model', async () => {
    const texts = ['a', 'b', 'c', 'd', 'e', 'f'];
    const answers = await Promise.all([
      ...texts.map((text) => inject('POST', '/echo', { text })),
      inject('POST', '/echo', { text: 'fail' }),
      ...texts.map((text) => inject('POST', '/echo/many', { text })),
      ...texts.map((text) => inject('POST', '/echo/few', { text })),
      ...texts.map(() => inject('POST', '/v2/models/scale/infer', SCALE_REQUEST)),
      inject('POST', '/v2/models/scale/infer', { ...SCALE_REQUEST, parameters: { fail: 'throw' } }),
    ]);
    expect(answers.map((a) => a.statusCode).filter((s) => s !== 200)).toEqual([500, 500]);

    const stats = await statisticsCounts(server.app);
    expect(stats).toEqual(await metricsCounts(server.app));
    // The earlier tests sent one /echo and one scale request.
    expect(stats).toEqual({ 'echo:3': { success: 19, failure: 1 }, 'scale:1': { success: 7, failure: 1 } });

    const echo = (await inject('GET', '/v2/models/echo/versions/3/stats')).json().model_stats;
    expect(echo).toHaveLength(1);
    expect(echo[0]).toMatchObject({ name: 'echo', version: '3' });
    expect(echo[0].inference_stats.queue.count).toBe(19);
    const batched = echo[0].batch_stats.reduce((n: number, b: { batch_size: number; compute_infer: { count: number } }) => n + b.batch_size * b.compute_infer.count, 0);
    expect(batched).toBe(echo[0].inference_count);
  });
});

describe('a decorated model whose server is starting, or whose instances are all past the restart limit', () => {
  const server = new ServeFnServer({
    models: [FragileModel],
    moduleUrl: new URL('../fixtures/models/fragile-model.ts', import.meta.url).href,
    restartPolicy: { maxRestarts: 0, windowMs: 600_000 },
    logger: false,
    collectProcessMetrics: false,
  });
  afterAll(() => server.close());

  it('is UNAVAILABLE in the index and not ready, with the reason', async () => {
    await server.prepare();
    expect((await server.app.inject({ method: 'POST', url: '/v2/repository/index' })).json()).toEqual([
      { name: 'fragile', version: '1', state: 'UNAVAILABLE', reason: 'server is starting' },
    ]);
    expect((await server.app.inject({ method: 'GET', url: '/v2/models/fragile/ready' })).statusCode).toBe(400);

    await server.start();
    expect((await server.app.inject({ method: 'GET', url: '/v2/models/fragile/ready' })).statusCode).toBe(200);
    await Promise.all([0, 1].map(() => server.app.inject({ method: 'POST', url: '/die', payload: { ms: 0 } })));

    const ready = await server.app.inject({ method: 'GET', url: '/v2/models/fragile/ready' });
    expect([ready.statusCode, ready.json()]).toEqual([400, { error: 'Model version not ready', code: 'SF_ERR_BAD_REQUEST' }]);
    expect((await server.app.inject({ method: 'POST', url: '/v2/repository/index' })).json()).toEqual([
      {
        name: 'fragile',
        version: '1',
        state: 'UNAVAILABLE',
        reason: expect.stringMatching(/^Model 'fragile' has no running instance: every instance crashed past its restart limit\. The next restart is in \d+ ms\.$/),
      },
    ]);
    expect((await server.app.inject({ method: 'POST', url: '/v2/repository/index', payload: { ready: true } })).json()).toEqual([]);
  });
});

describe('load and unload on a server of decorated models only', () => {
  const models = (modelControlMode?: 'explicit') => new ServeFnServer({ models: [EchoModel], logger: false, collectProcessMetrics: false, ...(modelControlMode ? { modelControlMode } : {}) });
  const explicit = models('explicit');
  const none = models();
  afterAll(async () => {
    await Promise.all([explicit.close(), none.close()]);
  });

  it("answers in explicit mode what a repository would: 400 for the class's model, unknown for any other name", async () => {
    await explicit.start();
    const post = async (url: string) => {
      const res = await explicit.app.inject({ method: 'POST', url });
      return [res.statusCode, res.json().code];
    };
    expect(await post('/v2/repository/models/echo/load')).toEqual([400, 'SF_ERR_MODEL_NOT_IN_REPOSITORY']);
    expect(await post('/v2/repository/models/echo/unload')).toEqual([400, 'SF_ERR_MODEL_NOT_IN_REPOSITORY']);
    const other = await explicit.app.inject({ method: 'POST', url: '/v2/repository/models/other/load' });
    expect([other.statusCode, other.json()]).toEqual([400, { error: "failed to load 'other', failed to poll from model repository: the server serves no model repository", code: 'SF_ERR_MODEL_POLL_FAILED' }]);
    expect(await post('/v2/repository/models/other/unload')).toEqual([404, 'SF_ERR_MODEL_UNKNOWN']);
  });

  it("refuses every load and unload with Triton's 503 in the default mode", async () => {
    await none.start();
    for (const url of ['/v2/repository/models/echo/load', '/v2/repository/models/other/unload']) {
      const res = await none.app.inject({ method: 'POST', url });
      expect([res.statusCode, res.json().code], url).toEqual([503, 'SF_ERR_MODEL_CONTROL_DISABLED']);
    }
  });
});
