import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { SfErrorCode } from '../../errors/index.js';
import { logFailure, toHttpError, type ErrorAnswerOptions, type HttpError } from '../../server/error-handler.js';

/**
 * How the two families answer errors. Both use the nested body of OpenAI's API reference
 * ("Error codes"; `{error: {message, type, param, code}}`), which vLLM's own ErrorResponse/ErrorInfo
 * (vllm/entrypoints/openai/engine/protocol.py) also follows for /score, /classify and /rerank —
 * recent vLLM no longer answers the flat `{object: "error", ...}` of its early releases. They differ
 * in `type` and `code`: OpenAI's routes name the class of error (invalid_request_error, server_error)
 * and carry serve-fn's catalogue code as the string `code`; vLLM's routes carry the HTTP phrase as
 * `type` and the status as the integer `code`, as vLLM's exception handler writes them.
 */
export type ErrorFlavour = 'openai' | 'vllm';

export interface OpenAiErrorBody {
  readonly error: { readonly message: string; readonly type: string; readonly param: string | null; readonly code: string | number; readonly [extra: string]: unknown };
}

/**
 * OpenAI answers every malformed or unacceptable request with 400 (too many inputs, too many
 * tokens, a bad field), an unknown model with 404 and overload with 429; vLLM does the same. The
 * engine's TEI statuses (413 batch, 422 validation, 424 wrong task) are folded onto those; 413 is
 * kept only for a body over the size limit, which never reached the route.
 */
function statusFor(code: SfErrorCode, status: number): number {
  if (code === 'SF_ERR_TEXT_BACKEND') return 500;
  if (code === 'SF_ERR_BODY_TOO_LARGE' || status === 404 || status === 415 || status === 429 || status >= 500) return status;
  return 400;
}

function typeFor(flavour: ErrorFlavour, status: number): string {
  if (flavour === 'vllm') return STATUS_CODES[status] ?? 'Error';
  // OpenAI's 429 body reads {"type": "requests", "code": "rate_limit_exceeded"}.
  if (status === 429) return 'requests';
  return status >= 500 ? 'server_error' : 'invalid_request_error';
}

export interface OpenAiErrorAnswer {
  readonly status: number;
  readonly body: OpenAiErrorBody;
  /** serve-fn's own answer to the error, for the log line. */
  readonly served: HttpError;
}

export function toOpenAiError(err: unknown, flavour: ErrorFlavour, options: ErrorAnswerOptions): OpenAiErrorAnswer {
  // toHttpError maps fastify's own errors onto the catalogue and hides a fault's message.
  const served = toHttpError(err, options);
  const { error: message, code } = 'code' in served.body ? served.body : { error: JSON.stringify(served.body.detail), code: 'SF_ERR_BAD_REQUEST' as const };
  const status = statusFor(code, served.status);
  const { param, errorFields } = (err ?? {}) as { param?: unknown; errorFields?: unknown };
  // A request error may carry machine-readable fields beside the message (the generation routes'
  // context overflow carries llama.cpp's `n_prompt_tokens` and `n_ctx`).
  const extra = status < 500 && typeof errorFields === 'object' && errorFields !== null ? errorFields : {};
  return {
    status,
    served,
    body: { error: { message, type: typeFor(flavour, status), param: typeof param === 'string' ? param : null, code: flavour === 'vllm' ? status : code, ...withoutEnvelopeKeys(extra) } },
  };
}

/** Extra error fields never replace the envelope's own. */
function withoutEnvelopeKeys(extra: object): Record<string, unknown> {
  const { message: _m, type: _t, param: _p, code: _c, ...rest } = extra as Record<string, unknown>;
  return rest;
}

export interface ErrorHandlingOptions {
  readonly flavour: ErrorFlavour;
  readonly exposeErrors: boolean;
  /** The body limit named in a 413 when fastify refused the body (the server's limit). */
  readonly bodyLimit: number;
}

/** The statuses these routes answer errors with, documented with the family's body for /docs (OpenAPI 3.0 schemas). */
export function errorResponses(flavour: ErrorFlavour): Record<number, object> {
  const schema = {
    type: 'object',
    properties: {
      error: {
        type: 'object',
        properties: { message: { type: 'string' }, type: { type: 'string' }, param: { type: 'string', nullable: true }, code: { type: flavour === 'vllm' ? 'integer' : 'string' } },
        required: ['message', 'type', 'param', 'code'],
      },
    },
    required: ['error'],
  };
  return {
    400: { description: 'Bad Request: a field is missing or wrong, the input is empty, too long, or more than the batch limit, or the model cannot do this task.', ...schema },
    404: { description: 'Not Found: no served model has that name.', ...schema },
    429: { description: 'Too Many Requests: the model is overloaded.', ...schema },
    500: { description: 'Internal Server Error.', ...schema },
  };
}

function send(reply: FastifyReply, status: number, body: OpenAiErrorBody): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/**
 * Every error inside the plugin's scope answered in the family's shape. Unknown paths stay with the
 * server's not-found handler: these routes share /v1 with others, so the scope has no prefix of its own.
 */
export function installOpenAiErrorHandling(scope: FastifyInstance, options: ErrorHandlingOptions): void {
  scope.setErrorHandler((err, request, reply) => {
    const answer = toOpenAiError(err, options.flavour, {
      bodyLimit: request.routeOptions.bodyLimit ?? options.bodyLimit,
      contentType: request.headers['content-type'],
      exposeErrors: options.exposeErrors,
      requestId: request.id,
    });
    logFailure(request, err, answer.served);
    return send(reply, answer.status, answer.body);
  });
}
