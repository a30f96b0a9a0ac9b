import { describe, expect, it } from 'vitest';
import type { EndpointDefinition } from '../../src/definition/model-definition.js';
import type { StreamFormat } from '../../src/metadata/records.js';
import { encodeStream, streamContentType } from '../../src/server/stream-writer.js';
import type { ErrorBody } from '../../src/server/error-handler.js';

async function* items(values: unknown[], failure?: Error): AsyncGenerator<unknown> {
  yield* values;
  if (failure) throw failure;
}

const describeError = (err: unknown): ErrorBody => ({ error: (err as Error).message, code: 'SF_ERR_EXECUTION_FAILED' });

async function encode(format: StreamFormat, values: unknown[], failure?: Error): Promise<Array<string | Buffer>> {
  const out: Array<string | Buffer> = [];
  for await (const frame of encodeStream(format, items(values, failure), describeError)) out.push(frame);
  return out;
}

describe('encodeStream', () => {
  it('writes SSE data events and an error event', async () => {
    expect(await encode('sse', [{ a: 1 }, 'two', undefined], new Error('boom'))).toEqual([
      'data: {"a":1}\n\n',
      'data: "two"\n\n',
      'data: null\n\n',
      'event: error\ndata: {"error":"boom","code":"SF_ERR_EXECUTION_FAILED"}\n\n',
    ]);
  });

  it('writes NDJSON lines and a final error line', async () => {
    expect(await encode('ndjson', [{ a: 1 }, [2]], new Error('boom'))).toEqual(['{"a":1}\n', '[2]\n', '{"error":"boom","code":"SF_ERR_EXECUTION_FAILED"}\n']);
  });

  it('passes bytes through as Buffers and rethrows a failure', async () => {
    const frames = encodeStream('bytes', items([new Uint8Array([1, 2, 3]).subarray(1)], new Error('cut')), describeError);
    const first = await frames.next();
    expect(Buffer.isBuffer(first.value)).toBe(true);
    expect([...(first.value as Buffer)]).toEqual([2, 3]);
    await expect(frames.next()).rejects.toThrow('cut');
  });
});

describe('streamContentType', () => {
  const endpoint = (stream: StreamFormat): EndpointDefinition => ({ stream, produces: 'audio/wav' }) as EndpointDefinition;
  it('answers by format, bytes with the endpoint content type', () => {
    expect(streamContentType(endpoint('sse'))).toBe('text/event-stream');
    expect(streamContentType(endpoint('ndjson'))).toBe('application/x-ndjson');
    expect(streamContentType(endpoint('bytes'))).toBe('audio/wav');
  });
});
