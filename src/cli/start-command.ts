import type { FastifyServerOptions } from 'fastify';
import pretty from 'pino-pretty';
import { ServeFnServer } from '../server/serve-fn-server.js';
import { STANDBY_GO } from './dev-command.js';
import { findEntry, loadModels } from './entry-discovery.js';

export interface StartOptions {
  readonly host: string;
  readonly port: number;
  readonly dev: boolean;
  readonly bodyLimit?: number;
  /** Longest wait for in-flight requests and finalize on shutdown before exiting 1. */
  readonly gracePeriodMs: number;
  /** Wait, with serve-fn loaded, for `serve-fn dev` to say go (it prepares the next reload this way). */
  readonly standby?: boolean;
}

function waitForGo(): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      if (message !== STANDBY_GO) return;
      process.off('message', onMessage);
      resolve();
    };
    process.on('message', onMessage);
    // The supervisor going away must end a standby server too.
    process.once('disconnect', () => process.exit(0));
  });
}

function loggerFor(dev: boolean): FastifyServerOptions['logger'] {
  const level = process.env.SERVE_FN_LOG_LEVEL ?? 'info';
  if (!dev) return { level };
  // A pretty stream in this thread starts faster than a pino transport thread, which matters for reloads.
  return { level, stream: pretty({ translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname', sync: true }) };
}

/** `serve-fn start` (and the child process of `serve-fn dev`): initialise, listen, drain on signals. */
export async function startCommand(entryPath: string | undefined, options: StartOptions): Promise<ServeFnServer> {
  if (options.standby) await waitForGo();
  const entry = findEntry(entryPath);
  const models = await loadModels(entry);
  const server = new ServeFnServer({ models, moduleUrl: entry.moduleUrl, logger: loggerFor(options.dev), bodyLimit: options.bodyLimit });
  const address = await server.listen(options.port, options.host);
  const base = address.replace('0.0.0.0', '127.0.0.1');
  const lines = [`serve-fn ready at ${address}`, `  Swagger UI  ${base}/docs`, `  OpenAPI     ${base}/openapi.json`];
  for (const def of server.definitions) {
    for (const ep of def.endpoints) lines.push(`  ${ep.httpMethod.padEnd(6)}      ${base}${ep.path}  (${def.name}.${ep.methodName})`);
  }
  if (options.dev) process.stdout.write(`${lines.join('\n')}\n`);
  else server.app.log.info({ address, endpoints: server.definitions.flatMap((d) => d.endpoints.map((e) => `${e.httpMethod} ${e.path}`)) }, 'serve-fn ready');

  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) {
      process.exit(1);
    }
    closing = true;
    server.app.log.info(`${signal}: draining`);
    const timer = setTimeout(() => {
      server.app.log.error(`shutdown took longer than ${options.gracePeriodMs} ms; exiting`);
      process.exit(1);
    }, options.gracePeriodMs);
    timer.unref();
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        server.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  return server;
}
