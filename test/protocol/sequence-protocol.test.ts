import { Client, credentials, status, type ServiceError } from '@grpc/grpc-js';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { call } from './grpc-raw.js';
import { messages, parse, pb, rawBytes, strings } from './protobuf-wire.js';

/**
 * Stateful models over the v2 protocol, served from a real repository folder by ServeFnServer
 * (worker-thread instances): `accumulate` keeps a running sum per correlation id in the memory of
 * each of its two instances, so only sticky routing in arrival order gives the right sums.
 */

const FIXTURES = fileURLToPath(new URL('../fixtures/sequence-repository', import.meta.url));
// Under test/ (not the OS temporary folder) so the copied model.ts resolves its relative src import.
const root = fileURLToPath(new URL(`../.tmp/sequence-repository-${process.pid}`, import.meta.url));

// The same model.ts without sequence_batching: a stateless model, which must refuse sequence parameters.
const PLAIN_CONFIG = readFileSync(join(FIXTURES, 'accumulate/config.pbtxt'), 'utf8')
  .replace('name: "accumulate"', 'name: "plain"')
  .replace('sequence_batching { max_sequence_idle_microseconds: 5000000 }', '')
  .replace('count: 2', 'count: 1');

type Id = number | string;
interface Step { readonly sum: number; readonly instance: number }

describe('sequences over the v2 protocol (HTTP and gRPC)', () => {
  let server: ServeFnServer;
  let client: Client;

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    cpSync(FIXTURES, root, { recursive: true });
    mkdirSync(join(root, 'plain/1'), { recursive: true });
    writeFileSync(join(root, 'plain/config.pbtxt'), PLAIN_CONFIG);
    cpSync(join(FIXTURES, 'accumulate/1/model.ts'), join(root, 'plain/1/model.ts'));
    server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false, grpc: { port: 0, host: '127.0.0.1' } });
    await server.listen(0, '127.0.0.1');
    client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const body = (value: number, parameters: Record<string, unknown>): string =>
    JSON.stringify({ inputs: [{ name: 'VALUE', shape: [1], datatype: 'INT32', data: [value] }], parameters });

  const post = (model: string, value: number, parameters: Record<string, unknown>) =>
    server.app.inject({ method: 'POST', url: `/v2/models/${model}/infer`, headers: { 'content-type': 'application/json' }, payload: body(value, parameters) });

  async function step(id: Id, value: number, flags: { start?: boolean; end?: boolean } = {}): Promise<Step> {
    const parameters = { sequence_id: id, ...(flags.start ? { sequence_start: true } : {}), ...(flags.end ? { sequence_end: true } : {}) };
    const res = await post('accumulate', value, parameters);
    expect(res.statusCode, res.body).toBe(200);
    const outputs = (res.json() as { outputs: { name: string; data: number[] }[] }).outputs;
    return { sum: outputs.find((o) => o.name === 'SUM')!.data[0], instance: outputs.find((o) => o.name === 'INSTANCE')!.data[0] };
  }

  async function sequence(id: Id, values: readonly number[]): Promise<Step[]> {
    const steps: Step[] = [];
    for (let i = 0; i < values.length; i++) steps.push(await step(id, values[i], { start: i === 0, end: i === values.length - 1 }));
    return steps;
  }

  it('two interleaved sequences each stay on one instance and keep their running sum', async () => {
    const [a, b] = await Promise.all([sequence(1001, [1, 2, 3, 4, 5]), sequence('user-b', [10, 20, 30, 40, 50])]);
    expect(a.map((s) => s.sum)).toEqual([1, 3, 6, 10, 15]);
    expect(b.map((s) => s.sum)).toEqual([10, 30, 60, 100, 150]);
    expect(new Set(a.map((s) => s.instance)).size).toBe(1);
    expect(new Set(b.map((s) => s.instance)).size).toBe(1);
    expect([a[0].instance, b[0].instance].sort()).toEqual([0, 1]);
  });

  it('answers 400 for a request without sequence_id, for an unknown id and for an ended one', async () => {
    const error = async (model: string, parameters: Record<string, unknown>) => {
      const res = await post(model, 1, parameters);
      return [res.statusCode, res.body];
    };
    expect(await error('accumulate', {})).toEqual([400, JSON.stringify({ error: "inference request to model 'accumulate' must specify a non-zero or non-empty correlation ID", code: 'SF_ERR_SEQUENCE_ID_MISSING' })]);
    const notStarted = (id: Id) => JSON.stringify({
      error: `inference request for sequence ${id} to model 'accumulate' must specify the START flag on the first request of the sequence (the sequence is unknown, has ended, or was freed after 5000000 µs idle)`,
      code: 'SF_ERR_SEQUENCE_NOT_STARTED',
    });
    expect(await error('accumulate', { sequence_id: 404 })).toEqual([400, notStarted(404)]);
    await sequence(7, [1, 1]);
    expect(await error('accumulate', { sequence_id: 7 })).toEqual([400, notStarted(7)]);
  });

  it('answers 400 for sequence parameters sent to a model without sequence_batching', async () => {
    const res = await post('plain', 1, { sequence_id: 3, sequence_start: true });
    expect([res.statusCode, res.body]).toEqual([400, JSON.stringify({ error: "inference request to model 'plain' sets 'sequence_id', but the model is not stateful: its configuration has no sequence_batching", code: 'SF_ERR_SEQUENCE_UNSUPPORTED' })]);
  });

  it('advertises the sequence extension in the server metadata', async () => {
    const res = await server.app.inject({ method: 'GET', url: '/v2' });
    expect((res.json() as { extensions: string[] }).extensions).toContain('sequence');
  });

  describe('over gRPC', () => {
    const param = (key: string, value: Buffer): Buffer => pb.mapEntry(4, key, value);

    /** ModelInfer with VALUE as raw_input_contents; InferParameter: bool_param 1, string_param 3, uint64_param 5. */
    function infer(id: Id, value: number, flags: { start?: boolean; end?: boolean }): Promise<Buffer> {
      const raw = Buffer.alloc(4);
      raw.writeInt32LE(value);
      const request = Buffer.concat([
        pb.string(1, 'accumulate'),
        param('sequence_id', typeof id === 'number' ? pb.varint(5, id) : pb.string(3, id)),
        ...(flags.start ? [param('sequence_start', pb.varint(1, true))] : []),
        ...(flags.end ? [param('sequence_end', pb.varint(1, true))] : []),
        pb.message(5, pb.string(1, 'VALUE'), pb.string(2, 'INT32'), pb.packedVarints(3, [1])),
        pb.bytes(7, raw),
      ]);
      return call(client, 'ModelInfer', request);
    }

    async function grpcStep(id: Id, value: number, flags: { start?: boolean; end?: boolean } = {}): Promise<Step> {
      const response = parse(await infer(id, value, flags));
      const names = messages(response, 5).map((o) => strings(o, 1)[0]);
      const raw = rawBytes(response, 6);
      return { sum: raw[names.indexOf('SUM')].readInt32LE(0), instance: raw[names.indexOf('INSTANCE')].readInt32LE(0) };
    }

    it('keeps a sequence on one instance, interleaved with one sent over HTTP', async () => {
      const grpcSteps = [await grpcStep(5, 2, { start: true })];
      const httpSteps = [await step(6, 100, { start: true })];
      grpcSteps.push(await grpcStep(5, 3));
      httpSteps.push(await step(6, 200, { end: true }));
      grpcSteps.push(await grpcStep(5, 4, { end: true }));
      expect(grpcSteps.map((s) => s.sum)).toEqual([2, 5, 9]);
      expect(httpSteps.map((s) => s.sum)).toEqual([100, 300]);
      expect(new Set(grpcSteps.map((s) => s.instance)).size).toBe(1);
      expect(grpcSteps[0].instance).not.toBe(httpSteps[0].instance);
    });

    it('refuses a request for an unknown sequence with INVALID_ARGUMENT', async () => {
      const err = (await infer('nobody', 1, {}).then(() => undefined, (e: ServiceError) => e))!;
      expect([err.code, err.details]).toEqual([
        status.INVALID_ARGUMENT,
        "inference request for sequence nobody to model 'accumulate' must specify the START flag on the first request of the sequence (the sequence is unknown, has ended, or was freed after 5000000 µs idle)",
      ]);
    });
  });
});
