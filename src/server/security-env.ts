import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createError } from '../errors/index.js';
import { addApiRestriction, parseApiRestriction, type ApiRestriction } from './restricted-apis.js';
import { parseCountPerWindow } from '../validation/count-per-window.js';
import type { SecurityOptions, TlsFiles } from './security-plugin.js';

export type Environment = Readonly<Record<string, string | undefined>>;

const BOOLEANS: Readonly<Record<string, boolean>> = { true: true, '1': true, yes: true, false: false, '0': false, no: false };

/**
 * Reads the security settings from the environment: SERVE_FN_API_KEY, SERVE_FN_CORS_ORIGINS
 * (`*` or comma-separated origins), SERVE_FN_RATE_LIMIT (`<max>/<window>`, e.g. `100/60s`),
 * SERVE_FN_REQUEST_TIMEOUT_MS, SERVE_FN_PROTECT_HEALTH, SERVE_FN_PROTECT_METRICS, and
 * SERVE_FN_HTTP_RESTRICTED_API and SERVE_FN_GRPC_RESTRICTED_PROTOCOL (Triton's
 * `<apis>:<header>=<value>` settings, several separated by spaces). Unset means off (the restricted
 * groups' loopback default); a malformed value stops start-up with SF_ERR_ENV_INVALID rather than
 * serving unprotected.
 */
export function securityOptionsFromEnv(env: Environment): SecurityOptions {
  const apiKey = apiKeyFrom(env.SERVE_FN_API_KEY);
  const protectHealth = booleanFrom('SERVE_FN_PROTECT_HEALTH', env.SERVE_FN_PROTECT_HEALTH);
  const protectMetrics = booleanFrom('SERVE_FN_PROTECT_METRICS', env.SERVE_FN_PROTECT_METRICS);
  for (const [name, on] of [['SERVE_FN_PROTECT_HEALTH', protectHealth], ['SERVE_FN_PROTECT_METRICS', protectMetrics]] as const) {
    if (on && apiKey === undefined) throw invalid(name, 'it protects with the API key, so set SERVE_FN_API_KEY too.');
  }
  const corsOrigins = env.SERVE_FN_CORS_ORIGINS;
  const rateLimit = env.SERVE_FN_RATE_LIMIT;
  const timeout = env.SERVE_FN_REQUEST_TIMEOUT_MS;
  const http = restrictionsFrom('SERVE_FN_HTTP_RESTRICTED_API', env.SERVE_FN_HTTP_RESTRICTED_API);
  const grpc = restrictionsFrom('SERVE_FN_GRPC_RESTRICTED_PROTOCOL', env.SERVE_FN_GRPC_RESTRICTED_PROTOCOL);
  return {
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(protectHealth ? { protectHealth } : {}),
    ...(protectMetrics ? { protectMetrics } : {}),
    ...(corsOrigins === undefined ? {} : { cors: { origins: originsFrom(corsOrigins) } }),
    ...(rateLimit === undefined ? {} : { rateLimit: rateLimitFrom(rateLimit) }),
    ...(timeout === undefined ? {} : { requestTimeoutMs: positiveIntegerFrom('SERVE_FN_REQUEST_TIMEOUT_MS', timeout) }),
    ...(http === undefined && grpc === undefined ? {} : { restrictedApis: { ...(http ? { http } : {}), ...(grpc ? { grpc } : {}) } }),
  };
}

/**
 * Reads SERVE_FN_TLS_CERT and SERVE_FN_TLS_KEY (PEM file paths; both or neither). The pair is
 * checked at start-up, so a wrong file fails with its name instead of at the first handshake.
 */
export function tlsOptionsFromEnv(env: Environment): TlsFiles | undefined {
  const certPath = env.SERVE_FN_TLS_CERT;
  const keyPath = env.SERVE_FN_TLS_KEY;
  if (certPath === undefined && keyPath === undefined) return undefined;
  if (certPath === undefined) throw invalid('SERVE_FN_TLS_KEY', 'set SERVE_FN_TLS_CERT to the certificate that goes with it.');
  if (keyPath === undefined) throw invalid('SERVE_FN_TLS_CERT', 'set SERVE_FN_TLS_KEY to the private key that goes with it.');
  const cert = readPem('SERVE_FN_TLS_CERT', certPath);
  const key = readPem('SERVE_FN_TLS_KEY', keyPath);
  const certificate = parsePem('SERVE_FN_TLS_CERT', certPath, () => new X509Certificate(cert));
  const privateKey = parsePem('SERVE_FN_TLS_KEY', keyPath, (): KeyObject => createPrivateKey(key));
  if (!certificate.checkPrivateKey(privateKey)) throw invalid('SERVE_FN_TLS_KEY', `'${keyPath}' is not the private key of the certificate in '${certPath}'.`);
  return { cert, key };
}

function invalid(name: string, reason: string): Error {
  return createError('SF_ERR_ENV_INVALID', name, reason);
}

function apiKeyFrom(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  // The key travels as one HTTP header token; the value itself is never echoed, it is a secret.
  if (!/^[\x21-\x7e]+$/.test(value)) {
    throw invalid('SERVE_FN_API_KEY', 'give printable ASCII without spaces (it is sent in an HTTP header), or unset it to turn authentication off.');
  }
  return value;
}

function booleanFrom(name: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  const parsed = BOOLEANS[value.trim().toLowerCase()];
  if (parsed === undefined) throw invalid(name, `expected true or false, got '${value}'.`);
  return parsed;
}

function positiveIntegerFrom(name: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw invalid(name, `expected a positive integer, got '${value}'.`);
  return n;
}

function originsFrom(value: string): readonly string[] | '*' {
  if (value.trim() === '*') return '*';
  const origins = value.split(',').map((o) => o.trim()).filter((o) => o !== '');
  if (origins.length === 0) throw invalid('SERVE_FN_CORS_ORIGINS', "expected '*' or comma-separated origins such as 'https://app.example.com', got an empty list.");
  for (const origin of origins) {
    if (!isOrigin(origin)) throw invalid('SERVE_FN_CORS_ORIGINS', `'${origin}' is not an origin: give scheme, host and optional port, such as 'https://app.example.com:8443'.`);
  }
  return origins;
}

function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
  } catch {
    return false;
  }
}

/** Settings separated by whitespace: a header value is one token without spaces. */
function restrictionsFrom(name: string, value: string | undefined): ApiRestriction[] | undefined {
  if (value === undefined) return undefined;
  try {
    return value.split(/\s+/).filter((setting) => setting !== '').reduce<ApiRestriction[]>((all, setting) => addApiRestriction(all, parseApiRestriction(setting)), []);
  } catch (err) {
    throw createError('SF_ERR_ENV_INVALID', name, (err as Error).message, { cause: err });
  }
}

function rateLimitFrom(value: string): { max: number; windowMs: number } {
  const parsed = parseCountPerWindow(value);
  if (!parsed || parsed.count < 1) {
    throw invalid('SERVE_FN_RATE_LIMIT', `expected '<max requests>/<window>' with a window in ms, s, m or h, such as '100/60s', got '${value}'.`);
  }
  return { max: parsed.count, windowMs: parsed.windowMs };
}

function readPem(name: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw invalid(name, `cannot read '${path}': ${(err as Error).message}`);
  }
}

function parsePem<T>(name: string, path: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw invalid(name, `'${path}' does not hold a PEM ${name === 'SERVE_FN_TLS_CERT' ? 'certificate' : 'private key'}: ${(err as Error).message}`);
  }
}
