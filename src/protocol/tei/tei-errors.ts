import type { FastifyInstance } from 'fastify';
import { ServeFnError, type SfErrorCode } from '../../errors/index.js';
import { logFailure, toHttpError, type ErrorAnswerOptions } from '../../server/error-handler.js';
import { RequestValidationError } from '../../validation/dto-validator.js';

/** TEI's `ErrorType` (router/src/lib.rs), serialised by serde as the variant's name. */
export type TeiErrorType = 'Unhealthy' | 'Backend' | 'Overloaded' | 'Validation' | 'Tokenizer' | 'Empty';

/** TEI's `ErrorResponse`: `{"error": message, "error_type": kind}`. */
export interface TeiErrorBody {
  readonly error: string;
  readonly error_type: TeiErrorType;
}

/**
 * The kind of each engine error, as TEI names it. Statuses are the catalogue's, which follow TEI's
 * `From<&ErrorType> for StatusCode` (Empty 400, Validation and Tokenizer 422, Backend 424,
 * Overloaded 429, Unhealthy 503), except an over-large batch: TEI documents it as 413 in its
 * openapi.json but answers 422; serve-fn answers the documented 413.
 */
const ERROR_TYPES: Partial<Record<SfErrorCode, TeiErrorType>> = {
  SF_ERR_TEXT_EMPTY: 'Empty',
  SF_ERR_TEXT_VALIDATION: 'Validation',
  SF_ERR_TEXT_BATCH_TOO_LARGE: 'Validation',
  SF_ERR_TEXT_TOO_LONG: 'Validation',
  SF_ERR_TEXT_ANSWER_TOO_LARGE: 'Validation',
  SF_ERR_TEXT_OVERLOADED: 'Overloaded',
  SF_ERR_TEXT_WRONG_TASK: 'Backend',
  SF_ERR_TEXT_BACKEND: 'Backend',
  SF_ERR_TOKENIZATION_FAILED: 'Tokenizer',
  // The `model` extension field naming a model that is not served, or none where several could answer.
  SF_ERR_TEXT_MODEL_UNKNOWN: 'Validation',
  SF_ERR_TEXT_MODEL_AMBIGUOUS: 'Validation',
};

export function teiError(err: unknown, options: ErrorAnswerOptions): { status: number; body: TeiErrorBody; fault: boolean } {
  if (err instanceof ServeFnError) {
    const kind = ERROR_TYPES[err.code];
    if (kind) return { status: err.statusCode, body: { error: err.message, error_type: kind }, fault: false };
  }
  // Unreadable JSON (the server's parser answers it as a 422 detail list) is a request-shape problem.
  if (err instanceof RequestValidationError) return { status: 422, body: { error: err.message, error_type: 'Validation' }, fault: false };
  // fastify's own refusals (body too large, wrong media type) keep their status; a fault answers a
  // generic message unless errors are exposed (`serve-fn dev`): the error's own may hold internals.
  const answer = toHttpError(err, options);
  const message = 'error' in answer.body ? answer.body.error : 'Invalid request';
  if (answer.status < 500) return { status: answer.status, body: { error: message, error_type: 'Validation' }, fault: false };
  // A server shutting down or without a running instance is TEI's "Unhealthy", its one 503.
  return { status: answer.status, body: { error: message, error_type: answer.status === 503 ? 'Unhealthy' : 'Backend' }, fault: answer.fault };
}

/** The TEI scope's error handler: every error becomes TEI's body, logged as the server logs its own. */
export function installTeiErrorHandling(scope: FastifyInstance, options: { readonly exposeErrors: boolean }): void {
  scope.setErrorHandler((err, request, reply) => {
    // Every TEI route has its own limit (--payload-limit), the one a 413 names.
    const answer = teiError(err, { bodyLimit: request.routeOptions.bodyLimit ?? 0, contentType: request.headers['content-type'], exposeErrors: options.exposeErrors, requestId: request.id });
    logFailure(request, err, { status: answer.status, body: { error: answer.body.error, code: codeOf(err) }, fault: answer.fault });
    return reply.code(answer.status).type('application/json').send(JSON.stringify(answer.body));
  });
}

function codeOf(err: unknown): SfErrorCode {
  return err instanceof ServeFnError ? err.code : 'SF_ERR_EXECUTION_FAILED';
}
