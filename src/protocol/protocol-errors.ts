import type { FastifyInstance, FastifyReply } from 'fastify';
import { createError } from '../errors/index.js';
import { toHttpError } from '../server/error-handler.js';

/**
 * Triton's error body (http_server.cc `EVBufferAddErrorJson`): the message only. Triton and KServe
 * clients read exactly this shape, so the /v2 routes leave out the `code` that serve-fn's own routes add.
 */
export interface ProtocolErrorBody {
  readonly error: string;
}

/**
 * The status and body of an error on a /v2 route. Statuses come from the catalogue, which follows
 * Triton's mapping (Triton's docs/protocol/README.md): unknown model 404, invalid argument 400, unavailable 503,
 * unsupported 501, internal 500.
 */
export function toProtocolError(err: unknown, bodyLimit: number, contentType?: string): { status: number; body: ProtocolErrorBody } {
  const { status, body } = toHttpError(err, bodyLimit, contentType);
  return { status, body: { error: 'error' in body ? body.error : JSON.stringify(body.detail) } };
}

/**
 * Paths Triton serves under /v2 (the regexes of http_server.cc, narrowed to what serve-fn serves):
 * a request that reaches the not-found handler on one of them used the wrong method, which Triton
 * answers 405 rather than 404.
 */
const SERVED_PATHS: readonly RegExp[] = [
  /^\/v2(?:\/health\/(?:live|ready))?$/,
  /^\/v2\/models\/stats$/,
  /^\/v2\/models\/[^/]+(?:\/versions\/[0-9]+)?(?:\/(?:ready|config|stats|infer|generate|generate_stream))?$/,
  /^\/v2\/repository\/(?:index|models\/[^/]+\/(?:load|unload))$/,
];

/** Sent as bytes so the content type stays Triton's bare `application/json`, without fastify's charset. */
function send(reply: FastifyReply, status: number, body: ProtocolErrorBody): FastifyReply {
  return reply.code(status).type('application/json').send(Buffer.from(JSON.stringify(body), 'utf8'));
}

/** Error and not-found handling for the /v2 scope: `{"error": ...}` bodies, 404 `Not Found`, 405 on a wrong method. */
export function installProtocolErrorHandling(scope: FastifyInstance, bodyLimit: number): void {
  scope.setErrorHandler((err, request, reply) => {
    const { status, body } = toProtocolError(err, bodyLimit, request.headers['content-type']);
    if (status >= 500) request.log.error({ err }, 'inference protocol request failed');
    return send(reply, status, body);
  });
  scope.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0];
    const err = SERVED_PATHS.some((p) => p.test(path)) ? createError('SF_ERR_METHOD_NOT_ALLOWED') : createError('SF_ERR_NOT_FOUND');
    return send(reply, err.statusCode, { error: err.message });
  });
}
