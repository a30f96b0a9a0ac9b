import { pino, type Logger } from 'pino';
import type { ModelContextData, RequestInfo } from '../definition/model-context.js';

/** What a model logs through: pino's logger (https://getpino.io/#/docs/api?id=logger). */
export type ModelLogger = Logger;

/** A logger that writes nothing, for an instance built without one (embedded in tests, `serve-fn openapi`). */
export function silentLogger(): ModelLogger {
  return pino({ level: 'silent' });
}

/** `ctx.logger`: the server's logger with the model, its version and the instance on every line. */
export function instanceLogger(root: ModelLogger, data: ModelContextData): ModelLogger {
  return root.child({ model: data.modelName, version: data.modelVersion, instance: data.instanceName });
}

/**
 * The root logger of a worker thread: pino writing each line to `post`, which sends it to the HTTP
 * thread through the worker's message channel, where relayWorkerLog writes it with the server's
 * logger (its level, format and destination). No time stamp: the server's logger adds its own.
 */
export function workerRootLogger(level: string, post: (line: string) => void): ModelLogger {
  return pino({ level, base: null, timestamp: false }, { write: post });
}

/** Writes a worker's log line with the server's logger, at the line's own level. */
export function relayWorkerLog(root: ModelLogger, line: string): void {
  const { level, msg, ...fields } = JSON.parse(line) as { level: number; msg?: string } & Record<string, unknown>;
  const method = root.levels.labels[level] as pino.Level | undefined;
  root[method ?? 'info'](fields, msg);
}

/**
 * The RequestInfo a method receives: the facts sent with the request, and `logger`, ctx.logger with
 * the request's id as `reqId`, the key fastify's own request lines carry, so a model's lines join
 * its access line. Built on first read: most requests never log.
 */
export function withRequestLogger<I extends Omit<RequestInfo, 'logger'>>(facts: I, logger: ModelLogger): I & Pick<RequestInfo, 'logger'> {
  let child: ModelLogger | undefined;
  // A copy: the facts may be the caller's own object (an inline instance's, a test's) and shared.
  return Object.defineProperty({ ...facts }, 'logger', {
    get: () => (child ??= logger.child({ reqId: facts.requestId })),
    enumerable: false,
  }) as I & Pick<RequestInfo, 'logger'>;
}
