import type { FastifyInstance, FastifyReply } from 'fastify';
import { createError } from '../errors/index.js';
import { errorResponse, KSERVE_SHARED_MEMORY_TAG, restrictedGroupErrors, routeDoc, type Schema } from './kserve-openapi.js';
import { readBody } from './kserve-repository-routes.js';
import type { SystemSharedMemoryRegistry } from './system-shared-memory/registry.js';

type RegionParams = { region: string };

const STATUS_SCHEMA: Schema = {
  type: 'array',
  items: {
    type: 'object',
    properties: { name: { type: 'string' }, key: { type: 'string' }, offset: { type: 'integer' }, byte_size: { type: 'integer' } },
    required: ['name', 'key', 'offset', 'byte_size'],
  },
};

const REGISTER_SCHEMA: Schema = {
  type: 'object',
  properties: {
    key: { type: 'string', description: "The POSIX shared-memory object the client created, as given to shm_open: '/' and a name without '/' (e.g. /input_simple)." },
    offset: { type: 'integer', minimum: 0, description: 'Where the region starts in the object, in bytes; 0 by default.' },
    byte_size: { type: 'integer', minimum: 1 },
  },
  required: ['key', 'byte_size'],
};

/** Registering reads and writes any /dev/shm object the server's user can open: a restricted group (restricted-apis.ts). */
const GROUP = { apiGroup: 'shared-memory' } as const;

const ERRORS: Readonly<Record<number, Schema>> = restrictedGroupErrors(GROUP.apiGroup, {
  400: errorResponse('Bad Request: an unknown region, a region registered twice, a range outside the object, no such object, or a region past the caps (--shm-max-regions, --shm-max-bytes).', 'SF_ERR_SHM_REGION_EXISTS', 'input_data'),
  501: errorResponse('Not Implemented: this system has no POSIX shared memory (/dev/shm).', 'SF_ERR_SHM_UNAVAILABLE', 'this system has no /dev/shm'),
});

/**
 * Triton's system shared-memory extension over HTTP (Triton's extension_shared_memory.md):
 * status, register and unregister under /v2/systemsharedmemory. The CUDA routes answer as a Triton
 * built without GPUs does: nothing registered, and registering refused (501 here, the protocol's
 * "unsupported"); they are left out of the OpenAPI document and of the server's extensions.
 */
export function registerSharedMemoryRoutes(scope: FastifyInstance, opts: { readonly sharedMemory: SystemSharedMemoryRegistry }): void {
  const { sharedMemory } = opts;
  const statusDoc = { schema: routeDoc('System shared-memory regions', { response: STATUS_SCHEMA, errors: ERRORS, tag: KSERVE_SHARED_MEMORY_TAG }), config: GROUP };
  scope.get('/systemsharedmemory/status', statusDoc, async () => sharedMemory.status());
  scope.get<{ Params: RegionParams }>('/systemsharedmemory/region/:region/status', statusDoc, async (request) => sharedMemory.status(request.params.region));
  scope.post<{ Params: RegionParams }>(
    '/systemsharedmemory/region/:region/register',
    { schema: routeDoc('Register a system shared-memory region the client created', { body: REGISTER_SCHEMA, errors: ERRORS, tag: KSERVE_SHARED_MEMORY_TAG }), config: GROUP },
    async (request, reply) => {
      const { key, offset, byte_size: byteSize } = readBody(request);
      if (key === undefined) throw createError('SF_ERR_BAD_REQUEST', "Shared memory register request has no 'key' field");
      if (typeof key !== 'string') throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'key': expected a string, got ${JSON.stringify(key)}`);
      if (byteSize === undefined) throw createError('SF_ERR_BAD_REQUEST', "Shared memory register request has no 'byte_size' field");
      await sharedMemory.register(request.params.region, key, readCount('offset', offset ?? 0), readCount('byte_size', byteSize));
      return emptyAnswer(reply);
    },
  );
  const unregisterDoc = { schema: routeDoc('Unregister one system shared-memory region, or all of them', { errors: ERRORS, tag: KSERVE_SHARED_MEMORY_TAG }), config: GROUP };
  scope.post('/systemsharedmemory/unregister', unregisterDoc, async (_request, reply) => {
    sharedMemory.unregister();
    return emptyAnswer(reply);
  });
  scope.post<{ Params: RegionParams }>('/systemsharedmemory/region/:region/unregister', unregisterDoc, async (request, reply) => {
    sharedMemory.unregister(request.params.region);
    return emptyAnswer(reply);
  });

  const hidden = { schema: { hide: true }, config: GROUP };
  scope.get('/cudasharedmemory/status', hidden, async () => []);
  scope.get<{ Params: RegionParams }>('/cudasharedmemory/region/:region/status', hidden, async (request) => {
    throw createError('SF_ERR_SHM_REGION_UNKNOWN', request.params.region);
  });
  scope.post<{ Params: RegionParams }>('/cudasharedmemory/region/:region/register', hidden, async (request) => {
    throw createError('SF_ERR_UNSUPPORTED', `failed to register CUDA shared memory region: '${request.params.region}', GPUs not supported`);
  });
  scope.post('/cudasharedmemory/unregister', hidden, async (_request, reply) => emptyAnswer(reply));
  scope.post('/cudasharedmemory/region/:region/unregister', hidden, async (_request, reply) => emptyAnswer(reply));
}

function readCount(name: string, value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw createError('SF_ERR_BAD_REQUEST', `Unable to parse '${name}': expected a non-negative integer, got ${JSON.stringify(value)}`);
}

/** Triton answers register and unregister with 200, `application/json` and no body. */
function emptyAnswer(reply: FastifyReply): FastifyReply {
  return reply.code(200).type('application/json').send();
}
