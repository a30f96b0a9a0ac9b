import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { logFailure } from '../../server/error-handler.js';
import { toOpenAiError, type ErrorHandlingOptions } from './openai-errors.js';

/**
 * OpenAI's stream (https://platform.openai.com/docs/api-reference/chat-streaming), as vLLM writes it:
 * one `data: {json}` event per chunk and `data: [DONE]` at the end. A failure after the 200 has
 * gone out is sent as a `data: {"error": ...}` event in the route's error shape, then `[DONE]`,
 * as vLLM does. A client that goes away destroys the stream, which returns the chunk generator,
 * which ends its sequences.
 */
export function sendOpenAiStream(request: FastifyRequest, reply: FastifyReply, chunks: AsyncIterable<object>, errors: ErrorHandlingOptions): FastifyReply {
  reply.code(200).header('cache-control', 'no-cache').type('text/event-stream; charset=utf-8');
  return reply.send(Readable.from(events(request, chunks, errors), { objectMode: false }));
}

async function* events(request: FastifyRequest, chunks: AsyncIterable<object>, errors: ErrorHandlingOptions): AsyncGenerator<string> {
  try {
    for await (const chunk of chunks) yield `data: ${JSON.stringify(chunk)}\n\n`;
  } catch (err) {
    const answer = toOpenAiError(err, errors.flavour, { bodyLimit: errors.bodyLimit, exposeErrors: errors.exposeErrors, requestId: request.id });
    logFailure(request, err, answer.served);
    yield `data: ${JSON.stringify(answer.body)}\n\n`;
  }
  yield 'data: [DONE]\n\n';
}
