import { Client, credentials, status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { call, failure } from '../protocol/grpc-raw.js';
import { pb } from '../protocol/protobuf-wire.js';
import { startCli } from './cli-harness.js';

const leak = (base: string): Promise<Response> =>
  fetch(`${base}/leak`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'e2e-leak-1' }, body: '{}' });

describe('a model that fails with a secret in its message', () => {
  it('under serve-fn start: answers a generic 500 with code and request id, and logs the stack with the model file and line', async () => {
    const cli = await startCli(['start', 'test/fixtures/errors/leaky-model.ts', '--host', '127.0.0.1']);
    try {
      await cli.waitForOutput(/serve-fn ready/);
      const res = await leak(cli.base);
      expect([res.status, res.headers.get('x-request-id'), await res.json()]).toEqual([
        500,
        'e2e-leak-1',
        { error: 'Internal Server Error', code: 'SF_ERR_EXECUTION_FAILED', request_id: 'e2e-leak-1' },
      ]);
      await cli.waitForOutput(/leaky-model\.ts:\d+/);
      const logged = cli
        .output()
        .split('\n')
        .filter((line) => line.includes('"reqId":"e2e-leak-1"') && line.includes('"level":50'));
      expect(logged).toHaveLength(1);
      expect(logged[0]).toContain('db password is hunter2');
      expect(logged[0]).toMatch(/leaky-model\.ts:\d+/);
      // The message says what the model threw once; its cause is logged beside it, not appended to it.
      const { err } = JSON.parse(logged[0]) as { err: { message: string; cause: { message: string } } };
      expect(err.message.split('db password is hunter2')).toHaveLength(2);
      expect(err.cause.message).toBe('db password is hunter2');
    } finally {
      await cli.stop();
    }
  });

  it('under serve-fn start: answers gRPC INTERNAL "Internal Server Error", as HTTP, and logs the message with the method', async () => {
    const cli = await startCli(['start', 'test/fixtures/errors/leaky-model.ts', '--host', '127.0.0.1']);
    try {
      const grpcPort = Number((await cli.waitForOutput(/"grpcPort":(\d+)/))[1]);
      const client = new Client(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
      try {
        const request = Buffer.concat([pb.string(1, 'leaky-tensors'), pb.message(5, pb.string(1, 'INPUT0'), pb.string(2, 'FP32'), pb.packedVarints(3, [1])), pb.bytes(7, Buffer.alloc(4))]);
        expect(await failure(call(client, 'ModelInfer', request))).toEqual([status.INTERNAL, 'Internal Server Error']);
      } finally {
        client.close();
      }
      await cli.waitForOutput(/gRPC call failed/);
      const logged = cli.output().split('\n').filter((line) => line.includes('gRPC call failed'));
      expect(logged).toHaveLength(1);
      expect(logged[0]).toContain('/srv/models/secret/model.onnx');
      expect(logged[0]).toContain('"method":"/inference.GRPCInferenceService/ModelInfer"');
    } finally {
      await cli.stop();
    }
  });

  it('under serve-fn dev: shows the message to the developer', async () => {
    const cli = await startCli(['dev', 'test/fixtures/errors/leaky-model.ts', '--host', '127.0.0.1']);
    try {
      await cli.waitForOutput(/serve-fn ready/);
      const res = await leak(cli.base);
      expect([res.status, await res.json()]).toEqual([
        500,
        { error: "Model 'leaky' failed in Leaky.leak: db password is hunter2", code: 'SF_ERR_EXECUTION_FAILED' },
      ]);
    } finally {
      await cli.stop();
    }
  });
});
