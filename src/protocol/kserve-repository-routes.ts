import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';
import type { LoadRequest, ModelRepository } from '../inference/inference-model.js';
import {
  LOAD_REQUEST_SCHEMA,
  REPOSITORY_INDEX_REQUEST_SCHEMA,
  REPOSITORY_INDEX_SCHEMA,
  routeDoc,
  UNLOAD_REQUEST_SCHEMA,
} from './kserve-openapi.js';

/**
 * Triton's model repository extension (KServe v2 required_api.md; Triton's user_guide/model_management.md): the index in every control
 * mode; load and unload only in `explicit` mode, refused otherwise with Triton's 503 and message.
 */
export function registerRepositoryRoutes(scope: FastifyInstance, opts: { readonly repository: ModelRepository }): void {
  const { repository } = opts;
  scope.post('/repository/index', { schema: routeDoc('Models in the repository', { body: REPOSITORY_INDEX_REQUEST_SCHEMA, response: REPOSITORY_INDEX_SCHEMA }) }, async (request) => {
    const { ready } = readBody(request);
    if (ready !== undefined && typeof ready !== 'boolean') throw createError('SF_ERR_BAD_REQUEST', "Invalid value for 'ready': expected a boolean");
    return repository.index({ readyOnly: ready === true });
  });
  scope.post<{ Params: { model: string } }>(
    '/repository/models/:model/load',
    { schema: routeDoc('Load or reload a model (explicit control mode)', { body: LOAD_REQUEST_SCHEMA }) },
    async (request, reply) => {
      const load = readLoadRequest(readBody(request).parameters);
      if (repository.controlMode !== 'explicit') throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
      await repository.load(request.params.model, load);
      return reply.code(200).send();
    },
  );
  scope.post<{ Params: { model: string } }>(
    '/repository/models/:model/unload',
    { schema: routeDoc('Unload a model after its in-flight requests finish (explicit control mode)', { body: UNLOAD_REQUEST_SCHEMA }) },
    async (request, reply) => {
      checkUnloadParameters(readBody(request).parameters);
      if (repository.controlMode !== 'explicit') throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
      await repository.unload(request.params.model);
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
  let config: string | undefined;
  const files: Record<string, Uint8Array> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if (typeof value !== 'string') throw createError('SF_ERR_BAD_REQUEST', `Unable to parse '${key}': expected a string, got ${JSON.stringify(value)}.`);
    if (key === 'config') {
      config = value;
    } else if (key.startsWith('file:') && key.length > 'file:'.length) {
      files[key] = decodeBase64(key, value);
    } else {
      throw createError('SF_ERR_BAD_REQUEST', `Unexpected load parameter '${key}': use 'config' or 'file:<version>/<file name>'.`);
    }
  }
  return { ...(config === undefined ? {} : { config }), ...(Object.keys(files).length === 0 ? {} : { files }) };
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

function checkUnloadParameters(parameters: unknown): void {
  if (parameters === undefined) return;
  const dependents = (parameters as { unload_dependents?: unknown } | null)?.unload_dependents;
  if (dependents === undefined || dependents === false) return;
  if (dependents !== true) throw createError('SF_ERR_BAD_REQUEST', `Unable to parse 'unload_dependents': expected a boolean, got ${JSON.stringify(dependents)}.`);
  throw createError('SF_ERR_UNSUPPORTED', "'unload_dependents' is not supported: unload the dependent models one by one");
}
