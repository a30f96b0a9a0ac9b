import type { FastifyInstance } from 'fastify';
import { createError } from '../errors/index.js';
import { errorResponse } from './openapi-plugin.js';
import type { ServerState } from './server-state.js';

/** Liveness answers while the process runs; readiness only between start-up and drain, while every model can serve. */
export async function healthRoutes(app: FastifyInstance, opts: { state: ServerState }): Promise<void> {
  const hide = { hide: false, tags: ['health'] };
  const status = (value: string): Record<string, unknown> => ({ description: `\`{"status": "${value}"}\``, type: 'object', properties: { status: { type: 'string', enum: [value] } } });
  app.get('/health/live', { schema: { ...hide, summary: 'Liveness probe: 200 while the process serves', response: { 200: status('live') } } }, async () => ({ status: 'live' }));
  const ready = {
    ...hide,
    // `serve-fn start` opens the port once every model has initialised, so no probe sees a starting server.
    summary: 'Readiness probe: 200 while the server takes requests; 503 once it is shutting down, or while a model has no running instance',
    response: { 200: status('ready'), 503: errorResponse('Not ready: the server is shutting down, or a model has no running instance; send traffic elsewhere.', 'SF_ERR_NOT_READY', 'terminating') },
  };
  app.get('/health/ready', { schema: ready }, async (_req, reply) => {
    const reason = opts.state.notReadyReason();
    if (reason === undefined) return { status: 'ready' };
    const err = createError('SF_ERR_NOT_READY', reason);
    return reply.code(503).send({ error: err.message, code: err.code });
  });
}
