import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createError, exposesMessage, GENERIC_SERVER_ERROR, isServerFault, ServeFnError, statusOf, type SfErrorCode } from '../errors/index.js';
import { SUPPORTED_CONTENT_CODINGS } from './body-compression.js';
import { RequestValidationError, type ValidationIssue } from '../validation/dto-validator.js';
import { REQUEST_ID_HEADER } from './request-id.js';

/** fastify's (and @fastify/multipart's) own errors that users meet, mapped onto the catalogue. */
const FASTIFY_CODES: Readonly<Record<string, (err: FastifyError, limit: number, contentType: string) => ServeFnError>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (_err, limit) => createError('SF_ERR_BODY_TOO_LARGE', limit),
  FST_REQ_FILE_TOO_LARGE: (_err, limit) => createError('SF_ERR_BODY_TOO_LARGE', limit),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_err, _limit, contentType) => createError('SF_ERR_UNSUPPORTED_MEDIA_TYPE', contentType, 'this route', 'application/json'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: (err) => createError('SF_ERR_BAD_REQUEST', err.message),
};

/**
 * The code of an error that carries only a `statusCode` (a model's own `{statusCode: 404}`, a
 * plugin's error): the catalogue's generic code for that status, else the class's.
 */
const CODE_BY_STATUS: Readonly<Record<number, SfErrorCode>> = {
  404: 'SF_ERR_NOT_FOUND',
  405: 'SF_ERR_METHOD_NOT_ALLOWED',
  413: 'SF_ERR_BODY_TOO_LARGE',
  415: 'SF_ERR_UNSUPPORTED_MEDIA_TYPE',
  429: 'SF_ERR_RATE_LIMITED',
};

export interface ErrorBody {
  readonly error: string;
  readonly code: SfErrorCode;
  /** On server faults: the id the full error is logged under (also the `x-request-id` header). */
  readonly request_id?: string;
}

export interface ValidationErrorBody {
  readonly detail: readonly ValidationIssue[];
}

export interface HttpError {
  readonly status: number;
  readonly body: ErrorBody | ValidationErrorBody;
  /** A server fault (a 500, or a 5xx outside the catalogue), logged as an error with its stack; refusals (503 draining, 501) are not. */
  readonly fault: boolean;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ErrorAnswerOptions {
  /** The body limit named in a 413 when fastify's own check refused the body. */
  readonly bodyLimit: number;
  readonly contentType?: string;
  /**
   * Whether a server fault's body carries the error's message: `serve-fn dev` shows it, `serve-fn start`
   * answers a generic message, the code and the request id, as uvicorn answers a bare 500.
   */
  readonly exposeErrors: boolean;
  readonly requestId?: string;
}

/** The one place an error becomes an HTTP answer: 422 FastAPI detail for validation, `{error, code}` otherwise. */
export function toHttpError(err: unknown, options: ErrorAnswerOptions): HttpError {
  if (err instanceof RequestValidationError) return { status: 422, body: { detail: err.detail }, fault: false };
  const crossed = err as { statusCode?: unknown; detail?: unknown };
  if (crossed?.statusCode === 422 && Array.isArray(crossed.detail)) return { status: 422, body: { detail: crossed.detail }, fault: false };
  const known = asCatalogueError(err, options);
  const { status, code, message } = describeError(known);
  const fault = isServerFault(known);
  if (code === 'SF_ERR_CONTENT_ENCODING_UNSUPPORTED') return { status, body: { error: message, code }, fault, headers: { 'Accept-Encoding': SUPPORTED_CONTENT_CODINGS } };
  if (exposesMessage(known, options.exposeErrors)) return { status, body: { error: message, code }, fault };
  return { status, body: { error: GENERIC_SERVER_ERROR, code, ...(options.requestId ? { request_id: options.requestId } : {}) }, fault };
}

/** fastify's own errors, and a result fastify could not serialise, as the catalogue errors they are. */
function asCatalogueError(err: unknown, options: ErrorAnswerOptions): unknown {
  if (err instanceof ServeFnError) return err;
  const fastifyErr = err as FastifyError & { serialization?: { method?: string; url?: string } };
  const mapped = fastifyErr?.code ? FASTIFY_CODES[fastifyErr.code] : undefined;
  if (mapped) return mapped(fastifyErr, options.bodyLimit, options.contentType ?? 'none');
  // fastify marks an error thrown while serialising a reply (a BigInt, a cycle) with the route.
  if (fastifyErr?.serialization) {
    const route = `${fastifyErr.serialization.method ?? ''} ${fastifyErr.serialization.url ?? ''}`.trim();
    return Object.assign(createError('SF_ERR_RESPONSE_NOT_SERIALIZABLE', route, fastifyErr.message), { cause: err });
  }
  return err;
}

function describeError(err: unknown): { status: number; code: SfErrorCode; message: string } {
  if (err instanceof ServeFnError) return { status: err.statusCode, code: err.code, message: err.message };
  const status = statusOf(err);
  const code = CODE_BY_STATUS[status] ?? (status < 500 ? 'SF_ERR_BAD_REQUEST' : 'SF_ERR_EXECUTION_FAILED');
  return { status, code, message: (err as Error)?.message ?? String(err) };
}

/**
 * Logs a failed request as what it is: a server fault at error level with the error (stack and
 * `cause` chain, so the model's file and line); a full queue or socket limit, which an operator may
 * have to act on, as one warn line without a stack. A 503 while draining or not ready is expected,
 * and 4xx answers are the client's: the access line (request-log.ts) is all they get.
 */
export function logFailure(request: FastifyRequest, err: unknown, answer: HttpError): void {
  if (answer.fault) {
    request.log.error({ err }, 'request failed');
    return;
  }
  if (answer.status < 500 || !('code' in answer.body)) return;
  const { code, error } = answer.body;
  if (code === 'SF_ERR_DRAINING' || code === 'SF_ERR_NOT_READY') return;
  request.log.warn({ code, statusCode: answer.status }, error);
}

/**
 * The methods routed at a path, for a 405's `Allow` (RFC 9110 §15.5.6). OPTIONS is left out: CORS
 * answers it on every path.
 */
function allowedMethods(app: FastifyInstance, url: string): string[] {
  const path = url.split('?', 1)[0];
  return ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'].filter((method) => app.findRoute({ method, url: path }) !== null);
}

/**
 * A 404, or a 405 with `Allow` when the path is routed for other methods, as Starlette (FastAPI)
 * and Triton answer a wrong method.
 */
export function notFoundError(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): ServeFnError {
  const allowed = allowedMethods(app, request.url);
  if (allowed.length === 0) return createError('SF_ERR_NOT_FOUND');
  reply.header('Allow', allowed.join(', '));
  return createError('SF_ERR_METHOD_NOT_ALLOWED');
}

/**
 * Error bodies are serialised here rather than by the route's response schema, which would drop
 * what the schema leaves out (`request_id`, a 422's `ctx`).
 */
function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

export interface ErrorHandlingOptions {
  readonly bodyLimit: number;
  readonly exposeErrors: boolean;
  /** Whether answers now say `Connection: close` (a server draining before it stops). */
  readonly closingConnections?: () => boolean;
}

export function installErrorHandling(app: FastifyInstance, options: ErrorHandlingOptions): void {
  const closing = options.closingConnections;
  // Every answer names its request, so a client can quote it and the log line be found. One hook
  // for every header each answer gets, and a callback one: fastify runs an async hook through a
  // promise per request (https://fastify.dev/docs/latest/Reference/Hooks/#onrequest).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    if (closing?.()) reply.header('connection', 'close');
    done();
  });
  app.setErrorHandler((err, request, reply) => {
    const answer = toHttpError(err, {
      bodyLimit: request.routeOptions.bodyLimit ?? options.bodyLimit,
      contentType: request.headers['content-type'],
      exposeErrors: options.exposeErrors,
      requestId: request.id,
    });
    logFailure(request, err, answer);
    if (answer.headers) reply.headers(answer.headers);
    return sendJson(reply, answer.status, answer.body);
  });
  app.setNotFoundHandler((request, reply) => {
    const err = notFoundError(app, request, reply);
    return sendJson(reply, err.statusCode, { error: err.message, code: err.code } satisfies ErrorBody);
  });
}
