import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';
import type { LoadRequest, ModelRepository } from '../inference/inference-model.js';
import { checkJsonDepth } from '../validation/json-depth.js';
import { loadModel, readLoadParameters, repositoryIndex, unloadModel } from './model-control.js';
import {
  LOAD_REQUEST_SCHEMA,
  REPOSITORY_INDEX_REQUEST_SCHEMA,
  REPOSITORY_INDEX_SCHEMA,
  restrictedGroupErrors,
  routeDoc,
  UNLOAD_REQUEST_SCHEMA,
} from './kserve-openapi.js';

/** Loading writes and runs model files: a restricted group (restricted-apis.ts). */
const GROUP = { apiGroup: 'model-repository' } as const;
const ERRORS = restrictedGroupErrors(GROUP.apiGroup);

/** Triton's model repository extension over HTTP (model-control.ts), with JSON bodies and base64 files. */
export function registerRepositoryRoutes(scope: FastifyInstance, opts: { readonly repository: ModelRepository }): void {
  const { repository } = opts;
  scope.post('/repository/index', { schema: routeDoc('Models in the repository', { body: REPOSITORY_INDEX_REQUEST_SCHEMA, response: REPOSITORY_INDEX_SCHEMA, errors: ERRORS }), config: GROUP }, async (request) => {
    const { ready } = readBody(request);
    if (ready !== undefined && typeof ready !== 'boolean') throw createError('SF_ERR_BAD_REQUEST', "Invalid value for 'ready': expected a boolean");
    return repositoryIndex(repository, ready === true);
  });
  scope.post<{ Params: { model: string } }>(
    '/repository/models/:model/load',
    { schema: routeDoc('Load or reload a model (explicit control mode)', { body: LOAD_REQUEST_SCHEMA, errors: ERRORS }), config: GROUP },
    async (request, reply) => {
      await loadModel(repository, request.params.model, readLoadRequest(readBody(request).parameters));
      return reply.code(200).send();
    },
  );
  scope.post<{ Params: { model: string } }>(
    '/repository/models/:model/unload',
    { schema: routeDoc('Unload a model after its in-flight requests finish (explicit control mode)', { body: UNLOAD_REQUEST_SCHEMA, errors: ERRORS }), config: GROUP },
    async (request, reply) => {
      await unloadModel(repository, request.params.model, readUnloadDependents(readBody(request).parameters));
      return reply.code(200).send();
    },
  );
}

/** The JSON body of a repository request; an empty body is an empty request, as in Triton. */
export function readBody(request: FastifyRequest): Record<string, unknown> {
  const raw = request.body as Buffer | undefined;
  if (raw === undefined || raw.byteLength === 0) return {};
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw createError('SF_ERR_BODY_INVALID_JSON', (err as Error).message);
  }
  checkJsonDepth(body);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw createError('SF_ERR_BAD_REQUEST', `The request body must be a JSON object, got ${JSON.stringify(body)}.`);
  }
  return body as Record<string, unknown>;
}

function readLoadRequest(parameters: unknown): LoadRequest {
  if (parameters === undefined) return {};
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
    throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'parameters': expected an object, got ${JSON.stringify(parameters)}.`);
  }
  return readLoadParameters(stringEntries(parameters), { config: (_key, value) => value, file: decodeBase64 });
}

/** Lazily, so each value is checked just before its key is read, as the parameters come. */
function* stringEntries(parameters: object): Generator<readonly [string, string]> {
  for (const [key, value] of Object.entries(parameters)) {
    if (typeof value !== 'string') throw createError('SF_ERR_BAD_REQUEST', `Unable to parse '${key}': expected a string, got ${JSON.stringify(value)}.`);
    yield [key, value];
  }
}

/**
 * Buffer.from(…, 'base64') skips characters it does not know, so a damaged file would load
 * silently: the bytes must encode back to the same text (padded, as Python's base64 writes it).
 * The round trip is linear in the file's size; a regular expression over a file of megabytes
 * overflows the stack.
 */
function decodeBase64(key: string, value: string): Uint8Array {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value) throw createError('SF_ERR_BAD_REQUEST', `Parameter '${key}' is not valid base64.`);
  return new Uint8Array(bytes);
}

function readUnloadDependents(parameters: unknown): boolean {
  const dependents = (parameters as { unload_dependents?: unknown } | null | undefined)?.unload_dependents;
  if (dependents === undefined || typeof dependents === 'boolean') return dependents === true;
  throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'unload_dependents': expected a boolean, got ${JSON.stringify(dependents)}.`);
}
