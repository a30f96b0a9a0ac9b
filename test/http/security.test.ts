import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { IsString } from 'class-validator';
import fastify, { type FastifyInstance, type InjectOptions, type LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Endpoint, Instances, Model, ServeFnServer } from '../../src/index.js';
import { installErrorHandling } from '../../src/server/error-handler.js';
import { securityOptionsFromEnv, tlsOptionsFromEnv, type Environment } from '../../src/server/security-env.js';
import { securityPlugin, securityServerOptions, type SecurityOptions } from '../../src/server/security-plugin.js';
import { thrown as thrownError } from '../helpers/thrown.js';

class EchoBody {
  @IsString() text!: string;
}

@Model({ name: 'echo' })
@Instances(1, { inline: true })
class Echo {
  @Endpoint('/echo', { body: EchoBody })
  async echo(body: EchoBody): Promise<{ text: string }> {
    return { text: body.text };
  }
}

const KEY = 'sk-0123456789abcdef';
const UNAUTHORIZED = { error: "Missing or invalid API key: send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'.", code: 'SF_ERR_UNAUTHORIZED' };
const ORIGIN = 'https://app.example.com';

const servers: ServeFnServer[] = [];
const apps: FastifyInstance[] = [];

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all([...servers.splice(0).map((s) => s.close()), ...apps.splice(0).map((a) => a.close())]);
});

/** A serve-fn server with the security hooks on its root instance before any route, as `serve-fn start` installs them. */
async function secured(options: SecurityOptions): Promise<ServeFnServer> {
  const server = new ServeFnServer({ models: [Echo], logger: false, collectProcessMetrics: false });
  servers.push(server);
  await securityPlugin(server.app, options);
  await server.start();
  return server;
}

/** The KServe protocol layer's shape: serve-fn's error handling, then routes under a /v2 prefix. */
async function protocolShapedApp(options: SecurityOptions): Promise<FastifyInstance> {
  const app = fastify({ logger: false });
  apps.push(app);
  installErrorHandling(app, { bodyLimit: 1024, exposeErrors: false });
  await securityPlugin(app, options);
  await app.register(
    async (scope) => {
      scope.get('/health/live', async (_request, reply) => reply.code(200).send());
      scope.get('/health/ready', async (_request, reply) => reply.code(200).send());
      scope.get('/models/:model/ready', async (_request, reply) => reply.code(200).send());
    },
    { prefix: '/v2' },
  );
  await app.ready();
  return app;
}

function inject(server: ServeFnServer, options: InjectOptions): Promise<LightMyRequestResponse> {
  return server.app.inject(options);
}

function echo(headers: Record<string, string> = {}, remoteAddress = '127.0.0.1'): InjectOptions {
  return { method: 'POST', url: '/echo', payload: { text: 'hi' }, headers, remoteAddress };
}

describe('API key', () => {
  it('answers 401 with the catalogue body and a Bearer challenge when the key is missing', async () => {
    const server = await secured({ apiKey: KEY });
    const res = await inject(server, echo());
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual(UNAUTHORIZED);
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('accepts the key as a Bearer token (any scheme case) or as X-API-Key', async () => {
    const server = await secured({ apiKey: KEY });
    const accepted: Record<string, string>[] = [{ authorization: `Bearer ${KEY}` }, { authorization: `bearer ${KEY}` }, { 'x-api-key': KEY }];
    for (const headers of accepted) {
      const res = await inject(server, echo(headers));
      expect(res.statusCode, JSON.stringify(headers)).toBe(200);
      expect(res.json()).toEqual({ text: 'hi' });
    }
  });

  it('refuses a wrong key, a longer or shorter one, and other schemes', async () => {
    const server = await secured({ apiKey: KEY });
    const wrong: Record<string, string>[] = [
      { authorization: 'Bearer sk-0123456789abcdeF' },
      { authorization: `Bearer ${KEY}0` },
      { 'x-api-key': KEY.slice(0, -1) },
      { authorization: `Basic ${Buffer.from(`user:${KEY}`).toString('base64')}` },
      { authorization: KEY },
    ];
    for (const headers of wrong) {
      const res = await inject(server, echo(headers));
      expect([res.statusCode, res.json()], JSON.stringify(headers)).toEqual([401, UNAUTHORIZED]);
    }
  });

  it('puts Swagger UI, the OpenAPI document and unknown paths behind the key', async () => {
    const server = await secured({ apiKey: KEY });
    for (const url of ['/docs', '/docs/', '/openapi.json', '/no/such/route']) {
      const res = await inject(server, { method: 'GET', url });
      expect([res.statusCode, res.json()], url).toEqual([401, UNAUTHORIZED]);
    }
    const auth = { authorization: `Bearer ${KEY}` };
    const doc = await inject(server, { method: 'GET', url: '/openapi.json', headers: auth });
    expect(doc.statusCode).toBe(200);
    expect(doc.json().paths['/echo']).toBeDefined();
    expect((await inject(server, { method: 'GET', url: '/docs/', headers: auth })).statusCode).toBe(200);
    const missing = await inject(server, { method: 'GET', url: '/no/such/route', headers: auth });
    expect([missing.statusCode, missing.json()]).toEqual([404, { error: 'Not Found', code: 'SF_ERR_NOT_FOUND' }]);
  });

  it('leaves the health probes and /metrics open by default', async () => {
    const server = await secured({ apiKey: KEY });
    const live = await inject(server, { method: 'GET', url: '/health/live' });
    expect([live.statusCode, live.json()]).toEqual([200, { status: 'live' }]);
    const ready = await inject(server, { method: 'GET', url: '/health/ready?verbose=1' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { status: 'ready' }]);
    const metrics = await inject(server, { method: 'GET', url: '/metrics' });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain('# TYPE nv_inference_pending_request_count gauge');
  });

  it('opens the /v2 probes registered under a prefix, and nothing else under /v2', async () => {
    const app = await protocolShapedApp({ apiKey: KEY });
    expect((await app.inject({ method: 'GET', url: '/v2/health/live' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v2/health/ready' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'HEAD', url: '/v2/health/ready' })).statusCode).toBe(200);
    const model = await app.inject({ method: 'GET', url: '/v2/models/m/ready' });
    expect([model.statusCode, model.json()]).toEqual([401, UNAUTHORIZED]);
  });

  it('protects the probes and /metrics when asked to', async () => {
    const server = await secured({ apiKey: KEY, protectHealth: true, protectMetrics: true });
    for (const url of ['/health/live', '/health/ready', '/metrics']) {
      const res = await inject(server, { method: 'GET', url });
      expect([res.statusCode, res.json()], url).toEqual([401, UNAUTHORIZED]);
      expect((await inject(server, { method: 'GET', url, headers: { 'x-api-key': KEY } })).statusCode, url).toBe(200);
    }
    const app = await protocolShapedApp({ apiKey: KEY, protectHealth: true });
    expect((await app.inject({ method: 'GET', url: '/v2/health/ready' })).statusCode).toBe(401);
  });

  it('protects /metrics alone while the probes stay open', async () => {
    const server = await secured({ apiKey: KEY, protectMetrics: true });
    expect((await inject(server, { method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await inject(server, { method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
  });

  it('asks for nothing when no key is configured', async () => {
    const server = await secured({});
    expect((await inject(server, echo())).statusCode).toBe(200);
    expect((await inject(server, { method: 'GET', url: '/openapi.json' })).statusCode).toBe(200);
  });
});

describe('CORS', () => {
  const preflight = (origin: string): InjectOptions => ({
    method: 'OPTIONS',
    url: '/echo',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
  });

  it('answers a preflight from an allowed origin without asking for the key', async () => {
    const server = await secured({ apiKey: KEY, cors: { origins: [ORIGIN, 'http://localhost:3000'] } });
    const res = await inject(server, preflight(ORIGIN));
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, POST, PUT, DELETE');
    expect(res.headers['access-control-allow-headers']).toBe('authorization,content-type');
    expect(res.headers.vary).toContain('Origin');
  });

  it('gives no allow-origin to an origin that is not listed', async () => {
    const server = await secured({ cors: { origins: [ORIGIN] } });
    const res = await inject(server, preflight('https://evil.example.net'));
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const actual = await inject(server, echo({ origin: 'https://evil.example.net' }));
    expect(actual.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('lets an allowed page read a 401 and the rate-limit headers', async () => {
    const server = await secured({ apiKey: KEY, cors: { origins: [ORIGIN] } });
    const res = await inject(server, echo({ origin: ORIGIN }));
    expect(res.statusCode).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(res.headers['access-control-expose-headers']).toBe('retry-after, x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset, inference-header-content-length');
  });

  it("allows any origin with '*', and sends no CORS headers when CORS is off", async () => {
    const any = await secured({ cors: { origins: '*' } });
    expect((await inject(any, echo({ origin: 'https://x.example' }))).headers['access-control-allow-origin']).toBe('*');
    const off = await secured({});
    const res = await inject(off, echo({ origin: ORIGIN }));
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });
});

describe('rate limit', () => {
  const limited = { error: 'Too many requests: at most 3 per 60000 ms from one client; retry in 60 s.', code: 'SF_ERR_RATE_LIMITED' };

  it('answers 429 with Retry-After and the catalogue body after max requests, until the window passes', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 });
    const server = await secured({ rateLimit: { max: 3, windowMs: 60_000 } });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await inject(server, echo());
      expect(res.statusCode).toBe(200);
      remaining.push(String(res.headers['x-ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const over = await inject(server, echo());
    expect(over.statusCode).toBe(429);
    expect(over.json()).toEqual(limited);
    expect(over.headers['retry-after']).toBe('60');
    vi.advanceTimersByTime(20_000);
    const later = await inject(server, echo());
    expect([later.statusCode, later.headers['retry-after']]).toEqual([429, '40']);
    vi.advanceTimersByTime(40_000);
    expect((await inject(server, echo())).statusCode).toBe(200);
  });

  it('counts each client address on its own', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 });
    const server = await secured({ rateLimit: { max: 3, windowMs: 60_000 } });
    for (let i = 0; i < 4; i++) await inject(server, echo({}, '10.0.0.1'));
    expect((await inject(server, echo({}, '10.0.0.1'))).statusCode).toBe(429);
    expect((await inject(server, echo({}, '10.0.0.2'))).statusCode).toBe(200);
  });

  it('never counts or refuses the probes and /metrics, and counts unknown paths', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 });
    const server = await secured({ rateLimit: { max: 3, windowMs: 60_000 } });
    for (let i = 0; i < 5; i++) {
      expect((await inject(server, { method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
      expect((await inject(server, { method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    }
    for (let i = 0; i < 3; i++) expect((await inject(server, { method: 'GET', url: '/nowhere' })).statusCode).toBe(404);
    expect((await inject(server, echo())).statusCode).toBe(429);
    expect((await inject(server, { method: 'GET', url: '/health/live' })).statusCode).toBe(200);
  });

  it('counts requests refused for a missing key, so keys cannot be guessed at full speed', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 1_700_000_000_000 });
    const server = await secured({ apiKey: KEY, rateLimit: { max: 3, windowMs: 60_000 } });
    for (let i = 0; i < 3; i++) expect((await inject(server, echo({ 'x-api-key': `guess-${i}` }))).statusCode).toBe(401);
    const res = await inject(server, echo({ 'x-api-key': KEY }));
    expect([res.statusCode, res.json()]).toEqual([429, limited]);
  });
});

describe('server options', () => {
  const tls = { cert: Buffer.from('cert'), key: Buffer.from('key') };

  it('adds nothing by default, and HTTPS when given certificate and key', () => {
    expect(securityServerOptions({})).toEqual({});
    expect(securityServerOptions({}, tls)).toEqual({ https: { cert: tls.cert, key: tls.key } });
  });

  it('gives the request timeout to fastify and to the Node server it creates', () => {
    expect(securityServerOptions({ requestTimeoutMs: 250 })).toEqual({ requestTimeout: 250, http: { requestTimeout: 250 } });
    expect(securityServerOptions({ requestTimeoutMs: 250 }, tls)).toEqual({ requestTimeout: 250, https: { cert: tls.cert, key: tls.key, requestTimeout: 250 } });
  });

  /** Sends `raw` on a new connection and resolves with everything the server writes before closing. */
  function exchange(port: number, raw: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(raw));
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
  }

  it('answers 408 to a client whose body stalls, and serves one that finishes in time', async () => {
    const options = securityServerOptions({ requestTimeoutMs: 200 });
    // Node checks request deadlines every connectionsCheckingInterval (30 s by default); 20 ms keeps the test short.
    const app = fastify({ logger: false, ...options, http: { ...options.http, connectionsCheckingInterval: 20 } });
    apps.push(app);
    app.post('/upload', async (request) => ({ got: (request.body as { a: string }).a }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const head = 'POST /upload HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nConnection: close\r\n';
    const stalled = await exchange(port, `${head}Content-Length: 100\r\n\r\n{"a":`);
    expect(stalled.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    const body = '{"a":"b"}';
    const served = await exchange(port, `${head}Content-Length: ${body.length}\r\n\r\n${body}`);
    expect(served.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(served.endsWith('{"got":"b"}')).toBe(true);
  });
});

/** The catalogue error a call throws, as code and message. */
function thrown(call: () => unknown): { code: unknown; message: string } {
  const { code, message } = thrownError(call);
  return { code, message };
}

const envError = (name: string, reason: string): { code: string; message: string } => ({
  code: 'SF_ERR_ENV_INVALID',
  message: `Environment variable ${name} is invalid: ${reason}`,
});

describe('securityOptionsFromEnv', () => {
  it('turns everything off when nothing is set', () => {
    expect(securityOptionsFromEnv({})).toEqual({});
  });

  it('reads every setting', () => {
    const env: Environment = {
      SERVE_FN_API_KEY: KEY,
      SERVE_FN_CORS_ORIGINS: `${ORIGIN}, http://localhost:3000`,
      SERVE_FN_RATE_LIMIT: '100/60s',
      SERVE_FN_REQUEST_TIMEOUT_MS: '30000',
      SERVE_FN_PROTECT_HEALTH: 'false',
      SERVE_FN_PROTECT_METRICS: 'TRUE',
    };
    expect(securityOptionsFromEnv(env)).toEqual({
      apiKey: KEY,
      protectMetrics: true,
      cors: { origins: [ORIGIN, 'http://localhost:3000'] },
      rateLimit: { max: 100, windowMs: 60_000 },
      requestTimeoutMs: 30_000,
    });
  });

  it('reads rate windows in ms, s, m and h, and * origins', () => {
    const rate = (value: string): unknown => securityOptionsFromEnv({ SERVE_FN_RATE_LIMIT: value }).rateLimit;
    expect(rate('10/500ms')).toEqual({ max: 10, windowMs: 500 });
    expect(rate(' 5 / 2m ')).toEqual({ max: 5, windowMs: 120_000 });
    expect(rate('1000/1h')).toEqual({ max: 1000, windowMs: 3_600_000 });
    expect(securityOptionsFromEnv({ SERVE_FN_CORS_ORIGINS: '*' }).cors).toEqual({ origins: '*' });
  });

  it("reads Triton's restricted API settings, several separated by spaces or lines", () => {
    expect(
      securityOptionsFromEnv({
        SERVE_FN_HTTP_RESTRICTED_API: ' shared-memory,model-repository:admin-key=a1\n statistics:stats-key=b2 ',
        SERVE_FN_GRPC_RESTRICTED_PROTOCOL: 'model-config:Admin-Key=c3',
      }).restrictedApis,
    ).toEqual({
      http: [
        { groups: ['shared-memory', 'model-repository'], header: 'admin-key', value: 'a1' },
        { groups: ['statistics'], header: 'stats-key', value: 'b2' },
      ],
      grpc: [{ groups: ['model-config'], header: 'admin-key', value: 'c3' }],
    });
    expect(securityOptionsFromEnv({ SERVE_FN_GRPC_RESTRICTED_PROTOCOL: 'shared-memory:k=v' }).restrictedApis).toEqual({ grpc: [{ groups: ['shared-memory'], header: 'k', value: 'v' }] });
  });

  it('names the variable and the fix for each malformed value', () => {
    const rateReason = (got: string): string => `expected '<max requests>/<window>' with a window in ms, s, m or h, such as '100/60s', got '${got}'.`;
    const cases: [Environment, { code: string; message: string }][] = [
      [{ SERVE_FN_RATE_LIMIT: '100' }, envError('SERVE_FN_RATE_LIMIT', rateReason('100'))],
      [{ SERVE_FN_RATE_LIMIT: '0/60s' }, envError('SERVE_FN_RATE_LIMIT', rateReason('0/60s'))],
      [{ SERVE_FN_RATE_LIMIT: '10/60d' }, envError('SERVE_FN_RATE_LIMIT', rateReason('10/60d'))],
      [{ SERVE_FN_REQUEST_TIMEOUT_MS: '1.5' }, envError('SERVE_FN_REQUEST_TIMEOUT_MS', "expected a positive integer, got '1.5'.")],
      [{ SERVE_FN_REQUEST_TIMEOUT_MS: '0' }, envError('SERVE_FN_REQUEST_TIMEOUT_MS', "expected a positive integer, got '0'.")],
      [{ SERVE_FN_PROTECT_HEALTH: 'maybe' }, envError('SERVE_FN_PROTECT_HEALTH', "expected true or false, got 'maybe'.")],
      [{ SERVE_FN_PROTECT_METRICS: 'yes' }, envError('SERVE_FN_PROTECT_METRICS', 'it protects with the API key, so set SERVE_FN_API_KEY too.')],
      [
        { SERVE_FN_CORS_ORIGINS: 'https://app.example.com/path' },
        envError('SERVE_FN_CORS_ORIGINS', "'https://app.example.com/path' is not an origin: give scheme, host and optional port, such as 'https://app.example.com:8443'."),
      ],
      [{ SERVE_FN_CORS_ORIGINS: ' , ' }, envError('SERVE_FN_CORS_ORIGINS', "expected '*' or comma-separated origins such as 'https://app.example.com', got an empty list.")],
      [
        { SERVE_FN_API_KEY: 'two words' },
        envError('SERVE_FN_API_KEY', 'give printable ASCII without spaces (it is sent in an HTTP header), or unset it to turn authentication off.'),
      ],
      [{ SERVE_FN_API_KEY: '' }, envError('SERVE_FN_API_KEY', 'give printable ASCII without spaces (it is sent in an HTTP header), or unset it to turn authentication off.')],
      [{ SERVE_FN_HTTP_RESTRICTED_API: 'health:k=v' }, envError('SERVE_FN_HTTP_RESTRICTED_API', "unknown API 'health': use shared-memory, model-repository, model-config, statistics, trace, logging.")],
      [{ SERVE_FN_GRPC_RESTRICTED_PROTOCOL: 'shared-memory' }, envError('SERVE_FN_GRPC_RESTRICTED_PROTOCOL', "expected '<api>,<api>...:<header>=<value>', such as 'shared-memory,model-repository:admin-key=<secret>'.")],
      [
        { SERVE_FN_HTTP_RESTRICTED_API: 'shared-memory:a=1 shared-memory,statistics:b=2' },
        envError('SERVE_FN_HTTP_RESTRICTED_API', "API 'shared-memory' can not be specified in multiple config groups."),
      ],
    ];
    for (const [env, expected] of cases) expect(thrown(() => securityOptionsFromEnv(env)), JSON.stringify(env)).toEqual(expected);
  });
});

describe('tlsOptionsFromEnv', () => {
  let dir: string;
  const file = (name: string): string => join(dir, name);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-tls-'));
    const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', file('key.pem'), '-out', file('cert.pem'),
      '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1');
    openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', file('other-key.pem'));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is off when neither variable is set', () => {
    expect(tlsOptionsFromEnv({})).toBeUndefined();
  });

  it('serves HTTPS with the certificate and key the variables name', async () => {
    const tls = tlsOptionsFromEnv({ SERVE_FN_TLS_CERT: file('cert.pem'), SERVE_FN_TLS_KEY: file('key.pem') });
    expect(tls).toEqual({ cert: readFileSync(file('cert.pem')), key: readFileSync(file('key.pem')) });
    const app = fastify({ logger: false, ...securityServerOptions({}, tls) });
    apps.push(app);
    app.get('/health/live', async () => ({ status: 'live' }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const answer = await new Promise<{ body: string; commonName: unknown }>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port, path: '/health/live', ca: tls!.cert }, (res) => {
        const commonName = (res.socket as TLSSocket).getPeerCertificate().subject.CN;
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ body, commonName }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer).toEqual({ body: '{"status":"live"}', commonName: 'localhost' });
  });

  it('wants both files, readable, as PEM, and matching', () => {
    const cert = file('cert.pem');
    const key = file('key.pem');
    expect(thrown(() => tlsOptionsFromEnv({ SERVE_FN_TLS_CERT: cert }))).toEqual(
      envError('SERVE_FN_TLS_CERT', 'set SERVE_FN_TLS_KEY to the private key that goes with it.'),
    );
    expect(thrown(() => tlsOptionsFromEnv({ SERVE_FN_TLS_KEY: key }))).toEqual(
      envError('SERVE_FN_TLS_KEY', 'set SERVE_FN_TLS_CERT to the certificate that goes with it.'),
    );
    const missing = file('missing.pem');
    expect(thrown(() => tlsOptionsFromEnv({ SERVE_FN_TLS_CERT: missing, SERVE_FN_TLS_KEY: key }))).toEqual(
      envError('SERVE_FN_TLS_CERT', `cannot read '${missing}': ENOENT: no such file or directory, open '${missing}'`),
    );
    expect(thrown(() => tlsOptionsFromEnv({ SERVE_FN_TLS_CERT: cert, SERVE_FN_TLS_KEY: file('other-key.pem') }))).toEqual(
      envError('SERVE_FN_TLS_KEY', `'${file('other-key.pem')}' is not the private key of the certificate in '${cert}'.`),
    );
    const swapped = thrown(() => tlsOptionsFromEnv({ SERVE_FN_TLS_CERT: key, SERVE_FN_TLS_KEY: cert }));
    expect(swapped.code).toBe('SF_ERR_ENV_INVALID');
    expect(swapped.message.startsWith(`Environment variable SERVE_FN_TLS_CERT is invalid: '${key}' does not hold a PEM certificate: `)).toBe(true);
  });
});
