import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';
import { decompressRequestBody } from './body-compression.js';
import { RequestValidationError, type ValidationIssue } from '../validation/dto-validator.js';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../validation/json-depth.js';

/**
 * The largest JSON body of a user route unless the server is given another: fastify's own default.
 * JSON is parsed on the HTTP thread, so a 64 MiB body (the limit of binary and multipart routes)
 * would hold every other request, health checks included, while it parses.
 */
export const DEFAULT_JSON_BODY_LIMIT = 1024 * 1024;

/** FastAPI's 422 for a body that is not JSON: `loc` ends at the offending character when known. */
function jsonInvalid(error: string, position?: number): RequestValidationError {
  const issue: ValidationIssue = {
    loc: position === undefined ? ['body'] : ['body', position],
    msg: 'JSON decode error',
    type: 'json_invalid',
    input: {},
    ctx: { error },
  };
  return new RequestValidationError([issue]);
}

/** Where V8's JSON.parse message places the error ("... at position 5", or the end of the input). */
function errorPosition(message: string, text: string): number | undefined {
  const at = /at position (\d+)/.exec(message);
  if (at) return Number(at[1]);
  return message.startsWith('Unexpected end of JSON input') ? text.length : undefined;
}

/** The route config key holding the limit fastify reads the route's JSON body under. */
const JSON_BODY_LIMIT = Symbol('jsonBodyLimit');

/**
 * The JSON parser of user routes, in place of fastify's: it undoes `Content-Encoding` (as /v2 does),
 * keeps fastify's refusal of `__proto__` and `constructor.prototype` keys, and answers what it cannot
 * read as FastAPI does, 422 `json_invalid`, with the parser's message; an empty body is a missing one.
 * A compressed body is inflated only up to the limit its compressed bytes were read under, so gzip
 * cannot carry past a route's limit what the plain body could not.
 */
export function installJsonBodyParser(app: FastifyInstance, defaultLimit: number): void {
  const secureParse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // fastify reads a body up to the route's own bodyLimit, else the parser's; request.routeOptions
  // falls back to the server's (64 MiB) instead, so each route's is kept where the parser finds it.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, [JSON_BODY_LIMIT]: route.bodyLimit ?? defaultLimit } as typeof route.config;
  });
  // A callback parser (https://fastify.dev/docs/latest/Reference/ContentTypeParser/): a body without
  // Content-Encoding, nearly every one, is parsed in the same turn, with no promise of its own.
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: defaultLimit }, (request: FastifyRequest, raw: Buffer, done: ParserDone) => {
    const header = request.headers['content-encoding'];
    const encoding = Array.isArray(header) ? header[0] : header;
    if (encoding === undefined) return parseJson(raw, secureParse, request, done);
    decompressRequestBody(raw, encoding, jsonBodyLimit(request) ?? defaultLimit).then((body) => parseJson(body, secureParse, request, done), done);
  });
}

function jsonBodyLimit(request: FastifyRequest): number | undefined {
  return (request.routeOptions.config as { [JSON_BODY_LIMIT]?: number } | undefined)?.[JSON_BODY_LIMIT];
}

type ParserDone = (err: Error | null, body?: unknown) => void;
type SecureParse = ReturnType<FastifyInstance['getDefaultJsonParser']>;

function parseJson(body: Buffer, secureParse: SecureParse, request: FastifyRequest, done: ParserDone): void {
  if (body.byteLength === 0) return done(new RequestValidationError([{ loc: ['body'], msg: 'Field required', type: 'missing', input: null }]));
  let text: string;
  try {
    text = utf8Text(body);
  } catch (err) {
    return done(err as Error);
  }
  // fastify's parser calls back inside its own try block: the request goes on from there only after.
  let failed = false;
  let value: unknown;
  secureParse(request, text, (err, parsed) => {
    failed = err !== null;
    value = parsed;
  });
  if (failed) return done(describeInvalid(text));
  if (jsonDepthExceeds(value)) return done(jsonInvalid(createError('SF_ERR_BODY_TOO_DEEP', MAX_JSON_DEPTH).message));
  done(null, value);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * JSON is UTF-8 (RFC 8259 §8.1). Decoding leniently would turn bad bytes into U+FFFD, and a text
 * model would then embed a text the client never sent; they are refused instead.
 */
function utf8Text(body: Buffer): string {
  try {
    return UTF8.decode(body);
  } catch {
    throw jsonInvalid('the body is not valid UTF-8');
  }
}

/** fastify's parser drops JSON.parse's message; parsing again, on this error path only, recovers it. */
function describeInvalid(text: string): RequestValidationError {
  try {
    JSON.parse(text);
  } catch (err) {
    const message = (err as Error).message;
    return jsonInvalid(message, errorPosition(message, text));
  }
  return jsonInvalid('Object contains forbidden prototype property');
}
