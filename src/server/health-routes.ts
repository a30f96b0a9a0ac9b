import type { FastifyInstance } from 'fastify';
import { createError } from '../errors/index.js';
import type { ServerState } from './server-state.js';

/** Liveness answers while the process runs; readiness only between start-up and drain, while every model can serve. */
export async function healthRoutes(app: FastifyInstance, opts: { state: ServerState }): Promise<void> {
  const hide = { hide: false, tags: ['health'] };
  app.get('/health/live', { schema: { ...hide, summary: 'Liveness probe' } }, async () => ({ status: 'live' }));
  app.get('/health/ready', { schema: { ...hide, summary: 'Readiness probe: 200 once every model is initialised, 503 while starting or draining' } }, async (_req, reply) => {
    const reason = opts.state.notReadyReason();
    if (reason === undefined) return { status: 'ready' };
    const err = createError('SF_ERR_NOT_READY', reason);
    return reply.code(503).send({ error: err.message, code: err.code });
  });
}
