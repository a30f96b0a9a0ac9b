import type { FastifyInstance } from 'fastify';
import { NOT_READY_ANSWER, routeDoc, SERVER_METADATA_SCHEMA } from './kserve-openapi.js';
import { serverMetadata, serverReady, type ServerIdentity } from './model-metadata.js';

/**
 * `GET /v2`, `/v2/health/live`, `/v2/health/ready` (KServe v2 required_api.md). Health answers carry no body:
 * 200 is true, 400 false, as in Triton's HandleServerHealth. Ready means the server is serving and
 * every model in the repository is ready.
 */
export function registerServerRoutes(scope: FastifyInstance, opts: ServerIdentity): void {
  // '' is /v2 itself; Triton serves no /v2/ (its regex is `/v2(?:/health/(live|ready))?`).
  scope.get('', { schema: routeDoc('Server metadata', { response: SERVER_METADATA_SCHEMA, errors: {} }) }, async () => serverMetadata(opts));
  scope.get('/health/live', { schema: routeDoc('Server liveness: 200 while the process serves', { errors: {} }) }, async (_request, reply) => reply.code(200).send());
  scope.get('/health/ready', { schema: routeDoc('Server readiness: 200 when every model is ready, 400 otherwise', { errors: NOT_READY_ANSWER }) }, async (_request, reply) => {
    return reply.code(serverReady(opts.ready, opts.repository) ? 200 : 400).send();
  });
}
