import type { ServerOptions as HttpServerOptions } from 'node:http';
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import cors from '@fastify/cors';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';
import { apiKeyVerifier, type PresentedCredentials } from './api-key.js';
import { apiAccess, callerAddress, DEV_CLIENT_HEADER, HTTP_RESTRICTION, type ApiGroup, type ApiRestriction } from './restricted-apis.js';

export interface SecurityOptions {
  /** When set, every request but the open probes and metrics needs `Authorization: Bearer <key>` or `X-API-Key: <key>`. */
  readonly apiKey?: string;
  /** Put the health probes behind the API key too (Kubernetes probes then need `httpHeaders`). */
  readonly protectHealth?: boolean;
  /** Put `/metrics` behind the API key too (the scraper then needs the key). */
  readonly protectMetrics?: boolean;
  /** Leave Swagger UI (/docs) and /openapi.json open with an API key set, as the probes are (`--docs public`). */
  readonly publicDocs?: boolean;
  /** Origins whose browser pages may call the API; no CORS headers at all when absent or false. */
  readonly cors?: { readonly origins: readonly string[] | '*' } | false;
  /** At most `max` requests per client (IP address) in each `windowMs`; probes and metrics are not counted. */
  readonly rateLimit?: { readonly max: number; readonly windowMs: number } | false;
  /** Longest time a client may take to send a whole request (slow or stalled uploads get 408). */
  readonly requestTimeoutMs?: number;
  /**
   * Triton's restricted API groups, per transport (`--http-restricted-api`, `--grpc-restricted-protocol`);
   * shared memory and repository control answer loopback clients only while none names them.
   */
  readonly restrictedApis?: RestrictedApiSettings;
}

export interface RestrictedApiSettings {
  readonly http?: readonly ApiRestriction[];
  readonly grpc?: readonly ApiRestriction[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The restricted API group (restricted-apis.ts) a route belongs to. */
    apiGroup?: ApiGroup;
  }
}

/** PEM certificate (chain) and private key: fastify's `https` option, and what gRPC's createSsl takes. */
export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** The part of fastify's options that shapes its Node server: TLS and the request timeout. */
export interface ServerTransportOptions {
  readonly requestTimeout?: number;
  readonly http?: HttpServerOptions;
  readonly https?: HttpsServerOptions;
}

export const HEALTH_ROUTES: readonly string[] = ['/health/live', '/health/ready', '/v2/health/live', '/v2/health/ready'];
export const METRICS_ROUTES: readonly string[] = ['/metrics'];

const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'];
/** Response headers a browser page may read: rate-limit state and the binary inference protocol's header. */
const CORS_EXPOSED_HEADERS = ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'inference-header-content-length'];

/**
 * Installs CORS, per-client rate limiting, API-key auth and the restricted API groups as onRequest
 * hooks, in that order: a preflight is answered before anything else, every answer (429, 401 and
 * 403 included) carries the CORS headers a page needs to read it, guessed keys and restricted
 * headers count against the rate limit, and a caller without the key learns nothing of the
 * restrictions. A route joins a group with `config: { apiGroup }`. Call it on the
 * root instance before any route is added and after serve-fn's error handling is installed (the
 * hooks throw catalogue errors, which that handler turns into `{error, code}` bodies).
 */
export async function securityPlugin(app: FastifyInstance, options: SecurityOptions): Promise<void> {
  if (options.cors) {
    const { origins } = options.cors;
    await app.register(cors, { origin: origins === '*' ? '*' : [...origins], methods: CORS_METHODS, exposedHeaders: CORS_EXPOSED_HEADERS });
  }
  if (options.rateLimit) {
    const { max, windowMs } = options.rateLimit;
    const uncounted = new Set([...HEALTH_ROUTES, ...METRICS_ROUTES]);
    await app.register(rateLimit, {
      // One app-level hook instead of the plugin's per-route ones, so unknown paths count as well.
      global: false,
      max,
      timeWindow: windowMs,
      // Kubelet probes and the scraper must never fail because a limit was set low.
      allowList: (request) => uncounted.has(routeOf(request)),
      errorResponseBuilder: (_request, context) => createError('SF_ERR_RATE_LIMITED', max, windowMs, Math.ceil(context.ttl / 1000)),
    });
    app.addHook('onRequest', app.rateLimit());
  }
  if (options.apiKey !== undefined) {
    const verify = apiKeyVerifier(options.apiKey);
    const open = openRoutes(options);
    app.addHook('onRequest', async (request, reply) => {
      const route = routeOf(request);
      if (open.has(route) || (options.publicDocs === true && isDocsRoute(route))) return;
      if (verify(presentedCredentials(request))) return;
      reply.header('www-authenticate', 'Bearer');
      throw createError('SF_ERR_UNAUTHORIZED');
    });
  }
  const refusal = apiAccess(options.restrictedApis?.http ?? [], HTTP_RESTRICTION);
  // A callback hook: fastify runs an async one through a promise per request, and every request passes here.
  app.addHook('onRequest', (request, _reply, done) => {
    const group = request.routeOptions.config.apiGroup;
    done(group === undefined ? undefined : refusal(group, { remoteAddress: callerAddress(request.socket.remoteAddress, request.headers[DEV_CLIENT_HEADER]), values: (name) => headerValues(request, name) }));
  });
}

function headerValues(request: FastifyRequest, name: string): readonly string[] {
  const value = request.headers[name];
  return value === undefined ? [] : typeof value === 'string' ? [value] : value;
}

/** Options for fastify's constructor: HTTPS when `tls` is given, and the request timeout (none by default). */
export function securityServerOptions(options: SecurityOptions, tls?: TlsFiles): ServerTransportOptions {
  const ms = options.requestTimeoutMs;
  // fastify sets the Node server's requestTimeout only after creating it, which leaves Node 20's
  // 60 s headersTimeout above it, and then a request whose body stalls is never timed out. Given
  // to the constructor too, Node pairs the two. Not connectionTimeout: that one also cuts a socket
  // that is idle while a long model call runs.
  const timeout = ms === undefined ? {} : { requestTimeout: ms };
  if (tls) return { ...timeout, https: { cert: tls.cert, key: tls.key, ...timeout } };
  return ms === undefined ? {} : { ...timeout, http: timeout };
}

function openRoutes(options: SecurityOptions): ReadonlySet<string> {
  return new Set([...(options.protectHealth ? [] : HEALTH_ROUTES), ...(options.protectMetrics ? [] : METRICS_ROUTES)]);
}

/** /openapi.json and @fastify/swagger-ui's routes under /docs: its page, assets, theme and the document it loads. */
function isDocsRoute(route: string): boolean {
  return route === '/openapi.json' || route === '/docs' || route.startsWith('/docs/');
}

/** The matched route's pattern; '' for a path no route matches, which is never open. */
function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? '';
}

function presentedCredentials(request: FastifyRequest): PresentedCredentials {
  const { authorization, 'x-api-key': apiKey } = request.headers;
  return { authorization: authorization === undefined ? [] : [authorization], apiKey: typeof apiKey === 'string' ? [apiKey] : [] };
}
