import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SfErrorCode } from '../errors/index.js';
import { logFailure, notFoundError, toHttpError, type ErrorAnswerOptions, type HttpError } from '../server/error-handler.js';

/**
 * Triton's error body (http_server.cc `EVBufferAddErrorJson`) is `{"error": message}`; Triton and
 * KServe clients read `error` and ignore other fields, so serve-fn adds the catalogue `code` here as
 * on its own routes, and on server faults the `request_id`.
 */
export interface ProtocolErrorBody {
  readonly error: string;
  readonly code: SfErrorCode;
  readonly request_id?: string;
}

/**
 * The status and body of an error on a /v2 route. Statuses come from the catalogue, which follows
 * Triton's mapping (Triton's docs/protocol/README.md): unknown model 404, invalid argument 400, unavailable 503,
 * unsupported 501, internal 500. A validation 422 (a nested ctx.infer) keeps its details as the message.
 */
export function toProtocolError(err: unknown, options: ErrorAnswerOptions): HttpError & { body: ProtocolErrorBody } {
  const answer = toHttpError(err, options);
  const body = 'detail' in answer.body ? { error: JSON.stringify(answer.body.detail), code: 'SF_ERR_BAD_REQUEST' as const } : answer.body;
  return { ...answer, body };
}

/** Sent as bytes so the content type stays Triton's bare `application/json`, without fastify's charset. */
function send(reply: FastifyReply, status: number, body: ProtocolErrorBody): FastifyReply {
  return reply.code(status).type('application/json').send(Buffer.from(JSON.stringify(body), 'utf8'));
}

/** How the /v2 scope answers errors: the limit of its bodies, and whether server faults show their message. */
export interface ProtocolErrorOptions {
  readonly bodyLimit: number;
  readonly exposeErrors: boolean;
}

export function protocolAnswerOptions(request: FastifyRequest, options: ProtocolErrorOptions): ErrorAnswerOptions {
  return { ...options, contentType: request.headers['content-type'], requestId: request.id };
}

/** Error and not-found handling for the /v2 scope: `{"error", "code"}` bodies, 404 `Not Found`, 405 with `Allow` on a wrong method. */
export function installProtocolErrorHandling(scope: FastifyInstance, options: ProtocolErrorOptions): void {
  scope.setErrorHandler((err, request, reply) => {
    const answer = toProtocolError(err, protocolAnswerOptions(request, options));
    logFailure(request, err, answer);
    if (answer.headers) reply.headers(answer.headers);
    return send(reply, answer.status, answer.body);
  });
  scope.setNotFoundHandler((request, reply) => {
    const err = notFoundError(scope, request, reply);
    return send(reply, err.statusCode, { error: err.message, code: err.code });
  });
}
