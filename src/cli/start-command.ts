import type { FastifyServerOptions } from 'fastify';
import type { SpeechServeOptions } from '../speech/server-speech-models.js';
import { pino } from 'pino';
import pretty from 'pino-pretty';
import { createError } from '../errors/index.js';
import { DEFAULT_SHARED_MEMORY_LIMITS, type SharedMemoryLimits } from '../protocol/system-shared-memory/registry.js';
import { SERVER_IDENTITY, ServeFnServer, type RepositoryServeOptions, type ServeOptions } from '../serve-fn-server.js';
import { startTracing, tracingRequested } from '../tracing/request-tracing.js';
import { securityOptionsFromEnv, tlsOptionsFromEnv } from '../server/security-env.js';
import type { RestrictedApiSettings } from '../server/security-plugin.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import { parseRestartLimit, RESTART_LIMIT_FORM } from '../definition/restart-limit.js';
import { START_INSTANCE_NICENESS } from '../instance/thread-priority.js';
import type { TextServeOptions } from '../text/text-model-loader.js';
import type { GeneratorServeOptions } from '../generation/folder-generator.js';
import { SERVER_READY, type ServerReady } from './dev-messages.js';
import { modelsToServe } from './entry-discovery.js';
import { assertPortFree } from './port-in-use.js';

export interface StartOptions {
  readonly host: string;
  /** --quantize and --max-audio-seconds, for FunASR export folders. */
  readonly speech?: SpeechServeOptions;
  /** pino's level (--log-level); it wins over SERVE_FN_LOG_LEVEL. */
  readonly logLevel?: string;
  /** The API key (--api-key); it wins over SERVE_FN_API_KEY and is checked as the variable is. */
  readonly apiKey?: string;
  /** Swagger UI and /openapi.json (--docs, --docs-kserve). */
  readonly docs?: ServeOptions['docs'];
  readonly port: number;
  readonly dev: boolean;
  readonly bodyLimit?: number;
  /** Largest JSON body of an endpoint without a bodyLimit of its own. */
  readonly jsonBodyLimit?: number;
  /** After SIGTERM, how long readiness answers 503 while requests are served; it wins over SERVE_FN_SHUTDOWN_DELAY_MS. */
  readonly shutdownDelayMs?: number;
  /** Longest wait for in-flight requests and finalize on shutdown before exiting 1. */
  readonly gracePeriodMs: number;
  /**
   * Run by `serve-fn dev`, which answers on this address and forwards to this server: the banner
   * names it, and the server tells `dev` its port once it listens (dev-command.ts).
   */
  readonly devAddress?: string;
  /** `--http-restricted-api` and `--grpc-restricted-protocol`; each given one wins over its environment variable. */
  readonly restrictedApis?: RestrictedApiSettings;
  /** Serve the inference protocol over gRPC on this port too (`serve-fn dev` leaves it off). */
  readonly grpc?: { readonly port: number };
  /** How a Triton model repository given as the entry is served; `maxInstances` wins over SERVE_FN_MAX_INSTANCES. */
  readonly repository?: Omit<RepositoryServeOptions, 'root'>;
  /** How often an instance may crash and be restarted (--restart-limit); it wins over SERVE_FN_RESTART_LIMIT. */
  readonly restartPolicy?: RestartPolicy;
  /** TEI's flags, for text model folders and @TextModel classes. */
  readonly text?: TextServeOptions;
  /** vLLM's flags, for generative model folders. */
  readonly generation?: GeneratorServeOptions;
  /** Caps on system shared-memory regions (--shm-max-regions, --shm-max-bytes); each cap the flags leave out keeps its default. */
  readonly sharedMemoryLimits?: Partial<SharedMemoryLimits>;
  /** Triton's latency summaries in /metrics (--metrics-summary-latencies). */
  readonly metricsSummaryLatencies?: boolean;
  /** --max-num-seqs and --diffusion-admission-wait-ms for diffusion folders. */
  readonly diffusion?: ServeOptions['diffusion'];
}

/**
 * pino's default `err` serializer appends each cause's message to the error's own, and serve-fn's
 * errors already quote the cause they wrap (`… failed: <what the model threw>`), so the log said it
 * twice: the cause is logged as its own object instead, with its stack.
 */
const serializers = { err: pino.stdSerializers.errWithCause };

function loggerFor(dev: boolean, logLevel: string | undefined): FastifyServerOptions['logger'] {
  const level = logLevel ?? process.env.SERVE_FN_LOG_LEVEL ?? 'info';
  // Written asynchronously: a synchronous write per access line held the HTTP thread for a quarter
  // of its time under load (bench/overhead); pino flushes what is buffered when the process exits.
  if (!dev) return { level, serializers, stream: pino.destination({ dest: 1, sync: false }) };
  // A pretty stream in this thread starts faster than a pino transport thread, which matters for reloads.
  // The request id would take a second line under each request's one (request-log.ts).
  return { level, serializers, stream: pretty({ translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname,reqId', sync: true }) };
}

async function serverFor(entryPaths: string | readonly string[] | undefined, options: StartOptions): Promise<ServeFnServer> {
  const logger = loggerFor(options.dev, options.logLevel);
  // Instances read it when they start (thread-priority.ts); dev keeps the library's default of 0.
  if (!options.dev && !process.env.SERVE_FN_INSTANCE_NICENESS) process.env.SERVE_FN_INSTANCE_NICENESS = String(START_INSTANCE_NICENESS);
  const fromEnv = securityOptionsFromEnv(options.apiKey === undefined ? process.env : { ...process.env, SERVE_FN_API_KEY: options.apiKey });
  const flags = options.restrictedApis;
  const security = {
    ...fromEnv,
    restrictedApis: {
      http: flags?.http?.length ? flags.http : fromEnv.restrictedApis?.http,
      grpc: flags?.grpc?.length ? flags.grpc : fromEnv.restrictedApis?.grpc,
    },
  };
  const tls = tlsOptionsFromEnv(process.env);
  const repository = { ...options.repository, maxInstances: options.repository?.maxInstances ?? maxInstancesFrom(process.env.SERVE_FN_MAX_INSTANCES) };
  const restartPolicy = options.restartPolicy ?? restartPolicyFrom(process.env.SERVE_FN_RESTART_LIMIT);
  const tracing = tracingRequested(process.env) ? await startTracing(process.env, SERVER_IDENTITY.serverVersion) : undefined;
  return new ServeFnServer({ ...(await modelsToServe(entryPaths, repository)), restartPolicy, text: options.text, generation: options.generation, speech: options.speech, diffusion: options.diffusion, logger, bodyLimit: options.bodyLimit, jsonBodyLimit: options.jsonBodyLimit, sharedMemoryLimits: { ...DEFAULT_SHARED_MEMORY_LIMITS, ...options.sharedMemoryLimits }, exposeErrors: options.dev, grpc: options.grpc, security, tls, summaryLatencies: options.metricsSummaryLatencies, tracing, docs: options.docs });
}

/** `serve-fn start` (and the child process of `serve-fn dev`): initialise, listen, drain on signals. */
export async function startCommand(entryPaths: string | readonly string[] | undefined, options: StartOptions): Promise<ServeFnServer> {
  // The supervisor going away must end the server it runs too.
  if (options.devAddress !== undefined) process.once('disconnect', () => process.exit(0));
  await assertPortFree(options.host, options.port, '--port');
  if (options.grpc) await assertPortFree(options.host, options.grpc.port, '--grpc-port');
  // Signals are taken from the start: one that arrives while models initialise stops the server
  // as soon as it exists, instead of killing the process with instances half started.
  let server: ServeFnServer | undefined;
  let requested: string | undefined;
  const delayMs = options.shutdownDelayMs ?? (options.dev ? 0 : shutdownDelayMs(process.env.SERVE_FN_SHUTDOWN_DELAY_MS));
  const onSignal = (signal: string): void => {
    if (server) shutdown(server, signal, options.gracePeriodMs, delayMs);
    else requested = signal;
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  server = await serverFor(entryPaths, options);
  if (requested) shutdown(server, requested, options.gracePeriodMs, delayMs);
  else await server.start();
  // A signal before or during the start: close() waits for the start and finalises; it exits the process.
  if (closing) return server;
  const address = await server.listen(options.port, options.host);
  if (options.devAddress !== undefined) process.send?.({ type: SERVER_READY, port: Number(new URL(address).port), banner: banner(server, options.devAddress) } satisfies ServerReady);
  else announce(server, address, options.dev);
  return server;
}

function announce(server: ServeFnServer, address: string, dev: boolean): void {
  if (dev) process.stdout.write(banner(server, address));
  else {
    const endpoints = server.definitions.flatMap((d) => [...d.endpoints.map((e) => `${e.httpMethod} ${e.path}`), ...d.sockets.map((s) => `WebSocket ${s.path}`)]);
    const textModels = server.texts.map(({ info }) => ({ name: info.name, task: info.task }));
    server.app.log.info({ address, grpcPort: server.grpcPort, endpoints, ...(textModels.length > 0 ? { textModels } : {}) }, 'serve-fn ready');
  }
}

/** The developer's banner: the address, the docs, and every route and model it serves. */
function banner(server: ServeFnServer, address: string): string {
  const base = address.replace('0.0.0.0', '127.0.0.1');
  const socketBase = base.replace(/^http/, 'ws');
  const lines = [`serve-fn ready at ${address}`, `  Swagger UI  ${base}/docs`, `  OpenAPI     ${base}/openapi.json`];
  for (const def of server.definitions) {
    for (const ep of def.endpoints) lines.push(`  ${ep.httpMethod.padEnd(6)}      ${base}${ep.path}  (${def.name}.${ep.methodName})`);
    for (const socket of def.sockets) lines.push(`  WebSocket   ${socketBase}${socket.path}  (${def.name}.${socket.methodName})`);
  }
  for (const { info } of server.repository?.models() ?? []) lines.push(`  model       ${info.name} version ${info.version} (${info.platform})`);
  for (const { info } of server.texts) {
    const routes = [...TEXT_ROUTES[info.task], `/v2/models/${info.name}/infer`].map((path) => `${base}${path}`);
    lines.push(`  text model  ${info.name} (${info.task}, max ${info.maxInputLength} tokens): POST ${routes.join(', ')}`);
  }
  for (const { generator } of server.generators) lines.push(`  generator   ${generator.name} (context ${generator.maxModelLen} tokens)`);
  return `${lines.join('\n')}\n`;
}

/** The routes a text model answers, by task, for the banner (TEI's first, then OpenAI's and Cohere's). */
const TEXT_ROUTES: Readonly<Record<string, readonly string[]>> = {
  embed: ['/embed', '/v1/embeddings'], rerank: ['/rerank', '/v1/rerank', '/v2/rerank'], classify: ['/predict', '/classify'], sparse: ['/embed_sparse'],
};

/** How long SIGTERM keeps serving with readiness 503, as a Kubernetes preStop sleep would (--shutdown-delay, SERVE_FN_SHUTDOWN_DELAY_MS). */
const DEFAULT_SHUTDOWN_DELAY_MS = 5000;

export function shutdownDelayMs(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_SHUTDOWN_DELAY_MS;
  if (!/^\d+$/.test(raw)) throw createError('SF_ERR_ENV_INVALID', 'SERVE_FN_SHUTDOWN_DELAY_MS', `expected a whole number of milliseconds, got '${raw}'`);
  return Number(raw);
}

function maxInstancesFrom(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw createError('SF_ERR_ENV_INVALID', 'SERVE_FN_MAX_INSTANCES', `expected a whole number of instances, 1 or more, got '${raw}'`);
  return Number(raw);
}

function restartPolicyFrom(raw: string | undefined): RestartPolicy | undefined {
  if (raw === undefined) return undefined;
  const policy = parseRestartLimit(raw);
  if (!policy) throw createError('SF_ERR_ENV_INVALID', 'SERVE_FN_RESTART_LIMIT', `expected ${RESTART_LIMIT_FORM}, got '${raw}'`);
  return policy;
}

let closing = false;

/**
 * Drains and exits 0; a second signal, a failure, or a shutdown past the grace period (counted from
 * the signal, delay included) exits 1. Only SIGTERM waits out the delay: SIGINT is someone at a terminal.
 */
function shutdown(server: ServeFnServer, signal: string, gracePeriodMs: number, delayMs: number): void {
  if (closing) process.exit(1);
  closing = true;
  const shutdownDelayMs = signal === 'SIGTERM' ? delayMs : 0;
  server.app.log.info(shutdownDelayMs > 0 ? `${signal}: readiness off, draining in ${shutdownDelayMs} ms` : `${signal}: draining`);
  const timer = setTimeout(() => {
    server.app.log.error(`shutdown took longer than ${gracePeriodMs} ms; exiting`);
    process.exit(1);
  }, gracePeriodMs);
  timer.unref();
  // Streams still open at 80% of what the delay leaves of the grace period are cancelled, leaving the rest for finalize.
  server.close({ shutdownDelayMs, streamTimeoutMs: Math.floor(Math.max(0, gracePeriodMs - shutdownDelayMs) * 0.8) }).then(
    () => process.exit(0),
    (err: unknown) => {
      server.app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
}
