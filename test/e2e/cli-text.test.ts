import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client, credentials, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../protocol/grpc-raw.js';
import { pb } from '../protocol/protobuf-wire.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { writeBertCrossEncoder, writeBertEncoder } from '../fixtures/text/text-model-folders.js';
import { startCli } from './cli-harness.js';

/** `serve-fn start` on text model folders, as a user runs it on the folders optimum exported. */
const root = scratchFolder('cli-text');
const models = join(root, 'models');

beforeAll(() => {
  writeBertEncoder(join(models, 'bge-tiny'), { pooling: 'cls', normalize: true });
  writeBertCrossEncoder(join(models, 'rerank-tiny'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function post(base: string, path: string, body: unknown): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

describe('serve-fn start <text model folders>', () => {
  it('serves every model folder of a parent folder with no code, lists them, and drains on SIGTERM', async () => {
    const cli = await startCli(['start', models, '--host', '127.0.0.1', '--dev']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      expect(cli.output()).toContain(`text model  bge-tiny (embed, max 64 tokens): POST ${cli.base}/embed, ${cli.base}/v1/embeddings, ${cli.base}/v2/models/bge-tiny/infer`);
      expect(cli.output()).toMatch(/text model {2}rerank-tiny \(rerank/);
      const embedded = await post(cli.base, '/v1/embeddings', { model: 'bge-tiny', input: ['what is deep learning?', 'paris'], encoding_format: 'float' });
      expect(embedded.status).toBe(200);
      expect(embedded.json.data).toHaveLength(2);
      const [vector] = embedded.json.data.map((d: { embedding: number[] }) => d.embedding);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
      const ranked = await post(cli.base, '/v1/rerank', { model: 'rerank-tiny', query: 'capital of france', documents: ['paris is the capital of france', 'bread'] });
      expect(ranked.status).toBe(200);
      expect(ranked.json.results).toHaveLength(2);
      const v2 = await post(cli.base, '/v2/models/bge-tiny/infer', { inputs: [{ name: 'text', datatype: 'BYTES', shape: [1], data: ['paris'] }] });
      expect(v2.json.outputs[0].shape).toEqual([1, 16]);
      expect((await fetch(`${cli.base}/metrics`).then((r) => r.text()))).toMatch(/te_request_count\{model="bge-tiny",method="batch"\} 1/);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 90_000);

  it("takes TEI's flags and environment variables: the served name, and the client batch limit", async () => {
    const cli = await startCli(['start', join(models, 'bge-tiny'), '--host', '127.0.0.1', '--served-model-name', 'my-embedder'], { MAX_CLIENT_BATCH_SIZE: '2' });
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      const listed = (await fetch(`${cli.base}/v1/models`).then((r) => r.json())) as { data: { id: string }[] };
      expect(listed.data.map((m: { id: string }) => m.id)).toEqual(['my-embedder']);
      const over = await post(cli.base, '/v1/embeddings', { model: 'my-embedder', input: ['a', 'b', 'c'] });
      expect(over.status).toBe(400);
      expect(over.json.error.message).toBe('batch size 3 > maximum allowed batch size 2');
      expect((await post(cli.base, '/v1/embeddings', { model: 'my-embedder', input: ['a', 'b'] })).status).toBe(200);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 90_000);

  it("answers ModelInfer calls past --max-concurrent-requests UNAVAILABLE, the code gRPC clients retry, as Triton's queue-full", async () => {
    const cli = await startCli(['start', join(models, 'bge-tiny'), '--host', '127.0.0.1', '--max-concurrent-requests', '64']);
    try {
      const grpcPort = Number((await cli.waitForOutput(/"grpcPort":(\d+)/, 60_000))[1]);
      const texts = Array.from({ length: 32 }, (_, i) => Buffer.from(`text number ${i} of a batch that fills half the admission limit`));
      // BYTES raw contents: each element is its 4-byte little-endian length, then its bytes.
      const raw = Buffer.concat(texts.flatMap((t) => [Buffer.from(new Uint32Array([t.byteLength]).buffer), t]));
      const request = Buffer.concat([pb.string(1, 'bge-tiny'), pb.message(5, pb.string(1, 'text'), pb.string(2, 'BYTES'), pb.packedVarints(3, [32])), pb.bytes(7, raw)]);
      const client = new Client(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
      try {
        const outcomes = await Promise.all(
          Array.from({ length: 8 }, () => call(client, 'ModelInfer', request).then(() => 'ok', (err: ServiceError) => `${status[err.code]} ${err.details}`)),
        );
        expect(outcomes, outcomes.join('; ')).toContain('ok');
        expect(outcomes, outcomes.join('; ')).toContain('UNAVAILABLE Model is overloaded');
        expect(outcomes.filter((o) => o !== 'ok' && o !== 'UNAVAILABLE Model is overloaded')).toEqual([]);
      } finally {
        client.close();
      }
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 90_000);

  it('refuses a folder that is not a model export, naming what it looked for', async () => {
    const cli = await startCli(['start', join(models, 'bge-tiny'), join(root, 'nothing-here'), '--host', '127.0.0.1']);
    expect(await cli.waitForExit(30_000)).toBe(1);
    expect(cli.output()).toContain('several paths are served only when each is a model folder served with no code');
  }, 60_000);
});
