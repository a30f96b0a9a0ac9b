import type { FastifyError, FastifyInstance } from 'fastify';
import { createError, ServeFnError, statusOf, type SfErrorCode } from '../errors/index.js';
import { RequestValidationError } from '../validation/dto-validator.js';

/** fastify's (and @fastify/multipart's) own errors that users meet, mapped onto the catalogue. */
const FASTIFY_CODES: Readonly<Record<string, (err: FastifyError, limit: number, contentType: string) => ServeFnError>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (_err, limit) => createError('SF_ERR_BODY_TOO_LARGE', limit),
  FST_REQ_FILE_TOO_LARGE: (_err, limit) => createError('SF_ERR_BODY_TOO_LARGE', limit),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_err, _limit, contentType) => createError('SF_ERR_UNSUPPORTED_MEDIA_TYPE', contentType, 'this route', 'application/json'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => createError('SF_ERR_BODY_INVALID_JSON', 'the body is empty'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: (err) => createError('SF_ERR_BAD_REQUEST', err.message),
};

export interface ErrorBody {
  readonly error: string;
  readonly code: SfErrorCode;
}

/** The one place an error becomes an HTTP answer: 422 FastAPI detail for validation, `{error, code}` otherwise. */
export function toHttpError(err: unknown, bodyLimit: number, contentType = 'none'): { status: number; body: ErrorBody | { detail: unknown } } {
  if (err instanceof RequestValidationError) return { status: 422, body: { detail: err.detail } };
  const crossed = err as { statusCode?: unknown; detail?: unknown };
  if (crossed?.statusCode === 422 && Array.isArray(crossed.detail)) return { status: 422, body: { detail: crossed.detail } };
  if (err instanceof ServeFnError) return { status: err.statusCode, body: { error: err.message, code: err.code } };
  const fastifyErr = err as FastifyError;
  const mapped = fastifyErr?.code ? FASTIFY_CODES[fastifyErr.code] : undefined;
  if (mapped) return toHttpError(mapped(fastifyErr, bodyLimit, contentType), bodyLimit);
  if (err instanceof SyntaxError || fastifyErr?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return toHttpError(createError('SF_ERR_BODY_INVALID_JSON', (err as Error).message), bodyLimit);
  }
  const status = statusOf(err);
  const message = (err as Error)?.message ?? String(err);
  return { status, body: { error: message, code: status < 500 ? 'SF_ERR_BAD_REQUEST' : 'SF_ERR_EXECUTION_FAILED' } };
}

export function installErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err, request, reply) => {
    const { status, body } = toHttpError(err, bodyLimit, request.headers['content-type']);
    if (status >= 500) request.log.error({ err }, 'request failed');
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((_request, reply) => {
    const err = createError('SF_ERR_NOT_FOUND');
    return reply.code(404).send({ error: err.message, code: err.code } satisfies ErrorBody);
  });
}
