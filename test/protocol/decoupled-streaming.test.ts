import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, credentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { fileText } from '../fixtures/decoupled/countdown-marker.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';
import { exchange, inferenceMethod } from './grpc-raw.js';
import { messages, parse, pb, rawBytes, strings, type Fields } from './protobuf-wire.js';

/**
 * A decoupled model.ts model (test/fixtures/decoupled/countdown) and a plain one (doubler) served
 * from a repository folder by ServeFnServer, in worker threads, over Triton's generate extension
 * (HTTP, SSE) and gRPC ModelStreamInfer. Bodies are compared byte for byte.
 */

const ROOT = fileURLToPath(new URL('../fixtures/decoupled', import.meta.url));
const COUNTDOWN_ERROR = (step: number): string => `Model 'countdown' failed in execute: countdown failed at ${step}`;

const event = (id: string, step: number): string => `data: {"id":"${id}","model_name":"countdown","model_version":"1","OUT":${step},"TEXT":"tick ${step}"}\n\n`;

describe('decoupled models over generate, generate_stream and ModelStreamInfer', () => {
  let server: ServeFnServer;
  let address: string;

  const post = (model: string, route: string, payload: string) =>
    server.app.inject({ method: 'POST', url: `/v2/models/${model}/${route}`, headers: { 'content-type': 'application/json' }, payload });

  beforeAll(async () => {
    // As `serve-fn dev` runs it, so a failing model's message reaches the client.
    server = new ServeFnServer({ models: [], repository: { root: ROOT }, collectProcessMetrics: false, grpc: { port: 0 }, exposeErrors: true });
    address = await server.listen(0, '127.0.0.1');
  }, 60_000);

  afterAll(async () => {
    await server?.close();
  });

  describe('HTTP', () => {
    it('generate_stream sends one SSE data event per response, in order', async () => {
      const res = await post('countdown', 'generate_stream', '{"id":"a","N":3}');
      expect([res.statusCode, res.headers['content-type'], res.headers['cache-control']]).toEqual([200, 'text/event-stream; charset=utf-8', 'no-cache']);
      expect(res.body).toBe(event('a', 3) + event('a', 2) + event('a', 1));
    });

    it('generate_stream answers an empty stream when the model sends no response', async () => {
      const res = await post('countdown', 'generate_stream', '{"N":0}');
      expect([res.statusCode, res.headers['content-type'], res.body]).toEqual([200, 'text/event-stream; charset=utf-8', '']);
    });

    it('a response marked final is the last event', async () => {
      const res = await post('countdown', 'generate_stream', '{"id":"f","N":5,"FINAL_AT":4}');
      expect(res.body).toBe(event('f', 5) + event('f', 4));
    });

    it('an error after the first response ends the stream with an SSE error event', async () => {
      const res = await post('countdown', 'generate_stream', '{"id":"e","N":3,"FAIL_AT":1}');
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe(`${event('e', 3)}${event('e', 2)}event: error\ndata: {"error":"${COUNTDOWN_ERROR(1)}","code":"SF_ERR_EXECUTION_FAILED"}\n\n`);
    });

    it('an error before the first response is an ordinary JSON error', async () => {
      const failed = await post('countdown', 'generate_stream', '{"N":2,"FAIL_AT":2}');
      expect([failed.statusCode, failed.headers['content-type'], failed.body]).toEqual([500, 'application/json', `{"error":"${COUNTDOWN_ERROR(2)}","code":"SF_ERR_EXECUTION_FAILED"}`]);
      const invalid = await post('countdown', 'generate_stream', '{"FAIL_AT":2}');
      expect([invalid.statusCode, invalid.body]).toEqual([400, '{"error":"Expected input \'N\' for model \'countdown\' is missing.","code":"SF_ERR_TENSOR_MISSING"}']);
    });

    it('generate answers a decoupled model\'s one response, and 400 when it sent another number', async () => {
      const one = await post('countdown', 'generate', '{"id":"g","N":1}');
      expect([one.statusCode, one.headers['content-type'], one.body]).toEqual([200, 'application/json', '{"id":"g","model_name":"countdown","model_version":"1","OUT":1,"TEXT":"tick 1"}']);
      const two = await post('countdown', 'generate', '{"N":2}');
      expect([two.statusCode, two.json()]).toEqual([400, {
        error: "Model 'countdown' is decoupled and sent 2 responses to this request; this call takes exactly one. Use generate_stream or gRPC ModelStreamInfer to receive every response.",
        code: 'SF_ERR_BAD_REQUEST',
      }]);
    });

    it('a model that is not decoupled answers generate, and generate_stream with one event', async () => {
      expect((await post('doubler', 'generate', '{"X":21}')).body).toBe('{"model_name":"doubler","model_version":"1","Y":42}');
      expect((await post('doubler', 'versions/1/generate_stream', '{"id":"d","X":[4]}')).body).toBe('data: {"id":"d","model_name":"doubler","model_version":"1","Y":8}\n\n');
    });

    it('/infer refuses a decoupled model with Triton\'s message', async () => {
      const res = await post('countdown', 'infer', '{"inputs":[{"name":"N","shape":[1],"datatype":"INT32","data":[1]}]}');
      expect([res.statusCode, res.body]).toEqual([501, '{"error":"HTTP end point doesn\'t support models with decoupled transaction policy","code":"SF_ERR_UNSUPPORTED"}']);
    });

    it('a client that disconnects stops the model: its generator\'s finally runs', async () => {
      const marker = join(scratchFolder('decoupled-disconnect'), 'stopped');
      const first = await new Promise<string>((resolve, reject) => {
        const req = httpRequest(`${address}/v2/models/countdown/generate_stream`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
          res.setEncoding('utf8');
          res.once('data', (chunk: string) => {
            req.destroy();
            resolve(chunk);
          });
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
        req.end(JSON.stringify({ id: 'x', N: 100_000, pause_ms: 1, marker }));
      });
      expect(first.startsWith(event('x', 100_000))).toBe(true);
      const [, sent] = /^stopped after (\d+) of 100000$/.exec(await fileText(marker)) ?? [];
      expect(Number(sent)).toBeGreaterThan(0);
      expect(Number(sent)).toBeLessThan(100_000);
      // The instance is free again: the model's only instance answers the next request.
      expect((await post('countdown', 'generate_stream', '{"id":"n","N":1}')).body).toBe(event('n', 1));
    });
  });

  describe('gRPC ModelStreamInfer', () => {
    /** ModelInferRequest: model_name 1, id 3, parameters 4, inputs 5 (one INT32 each, in contents.int_contents). */
    const inferRequest = (model: string, id: string, inputs: Record<string, number>, emptyFinal = false, shape = [1]): Buffer =>
      Buffer.concat([
        pb.string(1, model),
        pb.string(3, id),
        ...(emptyFinal ? [pb.mapEntry(4, 'triton_enable_empty_final_response', pb.varint(1, true))] : []),
        ...Object.entries(inputs).map(([name, v]) => pb.message(5, pb.string(1, name), pb.string(2, 'INT32'), pb.packedVarints(3, shape), pb.message(5, pb.packedVarints(2, [v])))),
      ]);

    function finalFlag(response: Fields): boolean | undefined {
      const entry = messages(response, 4).find((e) => strings(e, 1)[0] === 'triton_final_response');
      const value = entry && messages(entry, 2)[0].get(1)?.[0]?.value;
      return value === undefined ? undefined : value !== 0n;
    }

    /** Each answer as [id, first output's first INT32, final flag], or ['error', message]. */
    async function stream(...requests: Buffer[]): Promise<(string | number | boolean | undefined)[][]> {
      const client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
      try {
        const answers = await exchange(client, inferenceMethod('ModelStreamInfer'), requests);
        return answers.map((a) => {
          const fields = parse(a);
          const error = strings(fields, 1)[0];
          if (error) return ['error', error];
          const response = messages(fields, 2)[0];
          const raw = rawBytes(response, 6)[0];
          return [strings(response, 3)[0], raw === undefined ? undefined : raw.readInt32LE(0), finalFlag(response)];
        });
      } finally {
        client.close();
      }
    }

    const byId = (answers: (string | number | boolean | undefined)[][], id: string) => answers.filter((a) => a[0] === id);

    it('streams every response with triton_final_response, and the empty final response when asked', async () => {
      const answers = await stream(
        inferRequest('countdown', 'a', { N: 2 }, true),
        inferRequest('countdown', 'b', { N: 3, FINAL_AT: 2 }, true),
        inferRequest('countdown', 'c', { N: 2 }),
        inferRequest('countdown', 'z', { N: 0 }),
        inferRequest('doubler', 'd', { X: 5 }, false, [1, 1]),
      );
      expect(byId(answers, 'a')).toEqual([['a', 2, false], ['a', 1, false], ['a', undefined, true]]);
      expect(byId(answers, 'b')).toEqual([['b', 3, false], ['b', 2, true]]);
      expect(byId(answers, 'c')).toEqual([['c', 2, false], ['c', 1, false]]);
      expect(byId(answers, 'd')).toEqual([['d', 10, true]]);
      expect(answers).toHaveLength(8);
    });

    it('a failure mid-stream is the request\'s last answer, in error_message', async () => {
      expect(await stream(inferRequest('countdown', 'e', { N: 3, FAIL_AT: 2 }))).toEqual([['e', 3, false], ['error', COUNTDOWN_ERROR(2)]]);
    });
  });
});

describe('a decoupled model\'s queue policy over generate_stream', () => {
  let server: ServeFnServer;
  let address: string;

  beforeAll(async () => {
    const root = scratchFolder('decoupled-queue-policy');
    const policy = 'dynamic_batching { default_queue_policy { default_timeout_microseconds: 50000 max_queue_size: 1 } }\n';
    writeFiles(root, {
      'countdown/config.pbtxt': readFileSync(join(ROOT, 'countdown/config.pbtxt'), 'utf8') + policy,
      'countdown/1/model.ts': readFileSync(join(ROOT, 'countdown/1/model.ts'), 'utf8'),
    });
    server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
    address = await server.listen(0, '127.0.0.1');
  }, 60_000);

  afterAll(async () => {
    await server?.close();
  });

  const post = (payload: string) => server.app.inject({ method: 'POST', url: '/v2/models/countdown/generate_stream', headers: { 'content-type': 'application/json' }, payload });

  it('times a waiting request out after default_timeout_microseconds, and refuses one over max_queue_size, as KServe errors', async () => {
    // A long stream holds the model's only instance until the client goes.
    const busy = httpRequest(`${address}/v2/models/countdown/generate_stream`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    const streaming = new Promise<void>((resolve) => busy.on('response', (res) => res.once('data', () => resolve())));
    busy.on('error', () => undefined);
    busy.end(JSON.stringify({ N: 100_000, pause_ms: 1 }));
    try {
      await streaming;
      // Both arrive while the instance is busy: whichever is queued first waits out its timeout, the other finds the queue full.
      const answers = await Promise.all([post('{"N":1}'), post('{"N":1}')]);
      expect(answers.map((res) => [res.statusCode, res.body]).sort()).toEqual([
        [503, '{"error":"Exceeds maximum queue size","code":"SF_ERR_QUEUE_FULL"}'],
        [503, '{"error":"Request timeout expired","code":"SF_ERR_TIMEOUT"}'],
      ]);
    } finally {
      busy.destroy();
    }
  });
});
