import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header a request id arrives in (from a proxy or the client) and is answered in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * An incoming id is kept when it is short visible ASCII: it lands in every log line of the
 * request and in the answer, where a client must not place line breaks or kilobytes.
 */
const ACCEPTED_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** fastify's `genReqId`: the caller's `x-request-id` when acceptable, else a random UUID (unique across restarts, unlike a counter). */
export function requestId(request: IncomingMessage): string {
  const incoming = request.headers[REQUEST_ID_HEADER];
  return typeof incoming === 'string' && ACCEPTED_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
