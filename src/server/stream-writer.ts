import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { EndpointDefinition } from '../definition/model-definition.js';
import type { StreamFormat } from '../metadata/records.js';
import type { StreamChannel } from '../wire/stream-channel.js';
import type { ErrorBody } from './error-handler.js';

const TEXT_CONTENT_TYPES: Readonly<Record<Exclude<StreamFormat, 'bytes'>, string>> = {
  sse: 'text/event-stream',
  ndjson: 'application/x-ndjson',
};

/** The content type a streaming endpoint answers with. */
export function streamContentType(endpoint: EndpointDefinition): string {
  return endpoint.stream === 'bytes' || !endpoint.stream ? endpoint.produces : TEXT_CONTENT_TYPES[endpoint.stream];
}

/**
 * Sends a streamed model result. fastify pipes the Readable into the socket, so the channel is
 * pulled (and the instance granted more credit) only as fast as the client reads. A client that
 * goes away cancels the channel, which runs the model generator's `return()` in its instance.
 * `onError` logs a mid-stream failure and describes it for the closing SSE/NDJSON frame.
 */
export function sendStream(reply: FastifyReply, endpoint: EndpointDefinition, channel: StreamChannel, onError: (err: unknown) => ErrorBody): FastifyReply {
  const format = endpoint.stream ?? 'bytes';
  reply.raw.once('close', () => channel.cancel());
  reply.code(endpoint.status).header('cache-control', 'no-cache').type(streamContentType(endpoint));
  return reply.send(Readable.from(encodeStream(format, channel, onError), { objectMode: false }));
}

/**
 * The wire form of a stream. SSE follows sse-starlette (FastAPI's EventSourceResponse): one
 * `data: <json>` event per item and no closing event, the end of the response ends the stream;
 * a failure sends `event: error`. NDJSON ends a failed stream with an `{"error", "code"}` line.
 * Bytes has no way to say it failed but to break the connection, so the error is rethrown and
 * fastify destroys the response.
 */
export async function* encodeStream(format: StreamFormat, chunks: AsyncIterable<unknown>, onError: (err: unknown) => ErrorBody): AsyncGenerator<string | Buffer> {
  try {
    for await (const chunk of chunks) yield encodeChunk(format, chunk);
  } catch (err) {
    const body = onError(err);
    if (format === 'bytes') throw err;
    yield format === 'sse' ? `event: error\ndata: ${JSON.stringify(body)}\n\n` : `${JSON.stringify(body)}\n`;
  }
}

function encodeChunk(format: StreamFormat, chunk: unknown): string | Buffer {
  if (format === 'bytes') {
    const bytes = chunk as Uint8Array;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  const json = JSON.stringify(chunk ?? null);
  return format === 'sse' ? `data: ${json}\n\n` : `${json}\n`;
}
