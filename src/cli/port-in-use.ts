import { createServer } from 'node:net';
import { createError } from '../errors/index.js';

/**
 * Fails at once, naming the flag that picks another port, when `host:port` is taken: a server that
 * first initialised every model (seconds for real ones) only to fail on bind, or a `serve-fn dev`
 * that waited for a file change after its server could not bind, would hide the cause.
 */
export function assertPortFree(host: string, port: number, flag: string): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') return reject(err);
      const inUse = createError('SF_ERR_PORT_IN_USE', `${host}:${port}`, flag);
      inUse.cause = err;
      reject(inUse);
    });
    probe.listen({ port, host }, () => probe.close(() => resolve()));
  });
}
