import { format } from 'node:util';
import { ERROR_CATALOGUE, isErrorCode, type SfErrorCode } from './catalogue.js';

/** An error from the catalogue: it knows its code, its HTTP status and how to cross a thread. */
export class ServeFnError extends Error {
  readonly code: SfErrorCode;
  readonly statusCode: number;

  constructor(code: SfErrorCode, message: string, statusCode = ERROR_CATALOGUE[code].status) {
    super(message);
    this.name = 'ServeFnError';
    this.code = code;
    this.statusCode = statusCode;
  }
}

export function createError(code: SfErrorCode, ...args: unknown[]): ServeFnError {
  return new ServeFnError(code, format(ERROR_CATALOGUE[code].message, ...args.map(String)));
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
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) {
    const { code, statusCode, detail } = err as Error & { code?: unknown; statusCode?: unknown; detail?: unknown };
    return {
      detail: Array.isArray(detail) ? detail : undefined,
      __serveFnError: true,
      name: err.name,
      message: err.message,
      code: typeof code === 'string' ? code : undefined,
      statusCode: typeof statusCode === 'number' ? statusCode : undefined,
      stack: err.stack,
    };
  }
  return { __serveFnError: true, name: 'Error', message: String(err) };
}

export function deserializeError(s: SerializedError): Error {
  const err = isErrorCode(s.code)
    ? new ServeFnError(s.code, s.message, s.statusCode)
    : Object.assign(new Error(s.message), s.statusCode === undefined ? {} : { statusCode: s.statusCode }, s.detail === undefined ? {} : { detail: s.detail });
  if (!(err instanceof ServeFnError)) err.name = s.name;
  if (s.stack) err.stack = s.stack;
  return err;
}

/** The HTTP status an arbitrary thrown value should be answered with. */
export function statusOf(err: unknown): number {
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}
