import { format } from 'node:util';
import { ERROR_CATALOGUE, isErrorCode, type SfErrorCode } from './catalogue.js';

/** An error from the catalogue: it knows its code, its HTTP status and how to cross a thread. */
export class ServeFnError extends Error {
  readonly code: SfErrorCode;
  readonly statusCode: number;

  constructor(code: SfErrorCode, message: string, statusCode = ERROR_CATALOGUE[code].status, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ServeFnError';
    this.code = code;
    this.statusCode = statusCode;
  }
}

/**
 * `createError(code, ...values)` fills the catalogue message; a last argument `{ cause }` becomes
 * the error's `cause` instead of a value, as in @fastify/error, so the error that led to this one
 * (a user's initialize failure, with its file and line) stays attached to it.
 */
export function createError(code: SfErrorCode, ...args: unknown[]): ServeFnError {
  const last = args.at(-1);
  const options = isCauseOption(last) ? (args.pop() as ErrorOptions) : undefined;
  return new ServeFnError(code, format(ERROR_CATALOGUE[code].message, ...args.map(String)), undefined, options);
}

function isCauseOption(value: unknown): value is ErrorOptions {
  return typeof value === 'object' && value !== null && !(value instanceof Error) && Object.keys(value).length === 1 && Object.hasOwn(value, 'cause');
}

/**
 * The plain shape an error takes when it crosses a worker boundary. Structured clone keeps an
 * Error's message but drops `code` and `statusCode`, which decide the HTTP answer, so errors are
 * flattened explicitly (LitServe's PickleableHTTPException solves the same problem).
 */
export interface SerializedError {
  readonly __serveFnError: true;
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly statusCode?: number;
  readonly stack?: string;
  /** FastAPI-style validation details of a 422, kept so a nested ctx.infer reports them intact. */
  readonly detail?: unknown;
  /** The error's `cause`, flattened the same way, so the chain (and each stack) survives the thread hop. */
  readonly cause?: SerializedError;
}

/** Deeper chains are cut: a cause that leads to itself would otherwise never end. */
const MAX_CAUSE_DEPTH = 8;

export function serializeError(err: unknown, depth = 0): SerializedError {
  if (err instanceof Error) {
    const { code, statusCode, detail, cause } = err as Error & { code?: unknown; statusCode?: unknown; detail?: unknown };
    return {
      detail: Array.isArray(detail) ? detail : undefined,
      __serveFnError: true,
      name: err.name,
      message: err.message,
      code: typeof code === 'string' ? code : undefined,
      statusCode: typeof statusCode === 'number' ? statusCode : undefined,
      stack: err.stack,
      cause: cause === undefined || depth >= MAX_CAUSE_DEPTH ? undefined : serializeError(cause, depth + 1),
    };
  }
  return { __serveFnError: true, name: 'Error', message: String(err) };
}

export function deserializeError(s: SerializedError): Error {
  const options = s.cause === undefined ? undefined : { cause: deserializeError(s.cause) };
  const err = isErrorCode(s.code)
    ? new ServeFnError(s.code, s.message, s.statusCode, options)
    : Object.assign(new Error(s.message, options), s.statusCode === undefined ? {} : { statusCode: s.statusCode }, s.detail === undefined ? {} : { detail: s.detail });
  if (!(err instanceof ServeFnError)) err.name = s.name;
  if (s.stack) err.stack = s.stack;
  return err;
}

/** The HTTP status an arbitrary thrown value should be answered with. */
export function statusOf(err: unknown): number {
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}
