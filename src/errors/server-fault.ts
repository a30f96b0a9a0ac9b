import { ServeFnError, statusOf } from './serve-fn-error.js';

/** What a production server fault says, on every transport, instead of the error's message, which may hold the model's internals. */
export const GENERIC_SERVER_ERROR = 'Internal Server Error';

/**
 * A server fault: a 500, or a 5xx raised outside the catalogue (a model's own error). Its message
 * may name files and internals, so it is logged whole and answered only in development. The
 * catalogue's other 5xx (not ready, queue full, unsupported) are refusals written for clients.
 */
export function isServerFault(err: unknown): boolean {
  const status = statusOf(err);
  return status === 500 || (status > 500 && !(err instanceof ServeFnError));
}

/**
 * The one rule, for HTTP and gRPC alike, on whether a client reads an error's own message: yes,
 * unless it is a server fault and `exposeErrors` (`serve-fn dev`) is off.
 */
export function exposesMessage(err: unknown, exposeErrors: boolean): boolean {
  return exposeErrors || !isServerFault(err);
}
