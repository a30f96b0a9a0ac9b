import { Client, credentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { fakeServedGenerator, qwen3Tokenizer, QWEN3_IM_END } from '../helpers/fake-generator.js';
import { exchange, inferenceMethod } from './grpc-raw.js';
import { messages, parse, pb, rawBytes, strings } from './protobuf-wire.js';

/** A generator's KServe v2 view over gRPC ModelStreamInfer: one response per text delta, the last final. */
let server: ServeFnServer;

beforeAll(async () => {
  const tokenizer = await qwen3Tokenizer();
  const out = [...(await tokenizer.encode(' is a server.', false)), QWEN3_IM_END];
  server = new ServeFnServer({ models: [], generators: [await fakeServedGenerator(() => out)], logger: false, collectProcessMetrics: false, grpc: { port: 0, host: '127.0.0.1' } });
  await server.listen(0, '127.0.0.1');
});

afterAll(() => server.close());

describe('gRPC ModelStreamInfer on a generator', () => {
  it('streams text_output deltas that add up to the answer, the last one final', async () => {
    // ModelInferRequest: model_name 1, id 3, inputs 5 (InferInputTensor: name 1, datatype 2, shape 3, contents 5 → bytes_contents 8).
    const request = Buffer.concat([pb.string(1, 'fake-qwen3'), pb.string(3, 'g1'), pb.message(5, pb.string(1, 'text_input'), pb.string(2, 'BYTES'), pb.packedVarints(3, [1]), pb.message(5, pb.string(8, 'Triton')))]);
    const client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
    try {
      const answers = (await exchange(client, inferenceMethod('ModelStreamInfer'), [request])).map((a) => parse(a));
      expect(answers.map((a) => strings(a, 1)[0]).filter(Boolean)).toEqual([]);
      const texts = answers.map((a) => {
        // BYTES raw output: a 4-byte little-endian length, then the bytes.
        const raw = rawBytes(messages(a, 2)[0], 6)[0];
        return raw.subarray(4, 4 + raw.readUInt32LE(0)).toString('utf8');
      });
      expect(texts.join('')).toBe(' is a server.');
      const finals = answers.map((a) => messages(messages(a, 2)[0], 4).some((e) => strings(e, 1)[0] === 'triton_final_response' && messages(e, 2)[0].get(1)?.[0]?.value !== 0n));
      expect(finals.at(-1)).toBe(true);
      expect(finals.slice(0, -1).every((f) => !f)).toBe(true);
    } finally {
      client.close();
    }
  });
});
