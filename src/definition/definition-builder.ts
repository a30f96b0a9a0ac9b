import { types } from 'node:util';
import { createError } from '../errors/index.js';
import { readBatches, readEndpoints, readInstances, readModel, readTensors, readTextModel, readWebSocketEndpoints, readGenerativeModel } from '../metadata/reflection.js';
import { buildGenerativeModel } from './generative-model-builder.js';
import { buildTextModel, impliedTextTensors } from './text-model-builder.js';
import type { BatchRecord, EndpointRecord, HttpMethod, StreamFormat } from '../metadata/records.js';
import { normalizeBatchPolicy } from '../spec/batch-policy.js';
import { requireDtoRules } from './dto-rules.js';
import type { EndpointDefinition, InstanceGroupDefinition, ModelClass, ModelDefinition } from './model-definition.js';
import { buildSocketEndpoint } from './socket-endpoint-builder.js';
import { buildTensorInterface, EXECUTE_METHOD } from './tensor-interface-builder.js';
import { parseRestartLimit, RESTART_LIMIT_FORM } from './restart-limit.js';

const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE'];
const STREAM_FORMATS: readonly StreamFormat[] = ['sse', 'ndjson', 'bytes'];
/** The content type of a Buffer result when the endpoint names none. */
export const DEFAULT_PRODUCES = 'application/octet-stream';

export function isModelClass(value: unknown): value is ModelClass {
  return typeof value === 'function' && readModel(value as ModelClass) !== undefined;
}

/**
 * The @Model classes an entry module offers: its named exports and a default `{ models }` list.
 * The CLI and every worker read an entry through this, so a model listed only in the default
 * export is found on worker instances too.
 */
export function exportedModelClasses(exports: Record<string, unknown>): ModelClass[] {
  const found = new Set<ModelClass>();
  for (const value of Object.values(exports)) if (isModelClass(value)) found.add(value);
  const listed = (exports.default as { models?: unknown[] } | undefined)?.models;
  if (Array.isArray(listed)) for (const value of listed) if (isModelClass(value)) found.add(value);
  return [...found];
}

/**
 * Second phase of the metadata: checks what the decorators recorded and freezes it. Every misuse
 * is reported here, at start-up, with the class, the method and the fix.
 */
export function buildDefinitions(classes: readonly ModelClass[]): readonly ModelDefinition[] {
  const definitions = classes.map(buildDefinition);
  const names = new Map<string, string>();
  const routes = new Map<string, string>();
  for (const def of definitions) {
    const key = `${def.name}@${def.version}`;
    if (names.has(key)) throw createError('SF_ERR_MODEL_DUPLICATE', def.name, def.version);
    names.set(key, def.className);
    // A WebSocket upgrade is a GET, so it shares the router with GET endpoints.
    const claims = [...def.endpoints.map((ep) => [ep.httpMethod, ep.path, ep.id]), ...def.sockets.map((socket) => ['GET', socket.path, socket.id])];
    for (const [method, path, id] of claims) {
      const route = `${method} ${normalizePath(path)}`;
      const other = routes.get(route);
      if (other !== undefined) throw createError('SF_ERR_ENDPOINT_DUPLICATE', method, path, other, id);
      routes.set(route, id);
    }
  }
  return Object.freeze(definitions);
}

export function buildDefinition(target: ModelClass): ModelDefinition {
  const model = readModel(target);
  if (!model) throw createError('SF_ERR_MODEL_NOT_DECORATED', target.name);
  const name = model.options.name;
  if (typeof name !== 'string' || name.trim() === '') throw createError('SF_ERR_MODEL_NAME_MISSING', target.name);

  const batches = new Map(readBatches(target).map((b) => [b.method, b]));
  const endpointRecords = readEndpoints(target);
  const socketRecords = readWebSocketEndpoints(target);
  const textRecord = readTextModel(target);
  const text = textRecord && buildTextModel(target, textRecord);
  const generativeRecord = readGenerativeModel(target);
  const generative = generativeRecord && buildGenerativeModel(target, generativeRecord);
  const tensorsRecord = readTensors(target) ?? (text && impliedTextTensors(text));
  for (const method of batches.keys()) {
    if (tensorsRecord && method === EXECUTE_METHOD) continue;
    if (!endpointRecords.some((e) => e.method === method) && !socketRecords.some((s) => s.method === method)) {
      throw createError('SF_ERR_BATCH_WITHOUT_ENDPOINT', `${target.name}.${method}`);
    }
  }
  const tag = model.options.tag ?? name;
  const endpoints = endpointRecords.map((record) => buildEndpoint(target, record, batches.get(record.method), tag));
  const others = { endpoints: endpointRecords, batches: [...batches.values()] };
  const sockets = socketRecords.map((record) => buildSocketEndpoint(target, record, others, tag));
  const prototype = target.prototype as Record<string, unknown>;
  for (const hook of ['initialize', 'finalize'] as const) {
    const member = prototype[hook];
    if (member !== undefined && typeof member !== 'function') {
      throw createError('SF_ERR_HOOK_NOT_FUNCTION', target.name, hook, typeof member);
    }
  }
  const instances = buildInstances(target);
  const tensors = tensorsRecord && buildTensorInterface(target, tensorsRecord, batches.get(EXECUTE_METHOD), endpointRecords);
  if (endpoints.length === 0 && sockets.length === 0 && !tensors && !generative) throw createError('SF_ERR_MODEL_NO_ENDPOINTS', target.name);
  return Object.freeze({
    name,
    version: model.options.version ?? '1',
    description: model.options.description,
    className: target.name,
    target,
    instances,
    endpoints: Object.freeze(endpoints),
    sockets: Object.freeze(sockets),
    ...(tensors ? { tensors } : {}),
    ...(text ? { text } : {}),
    ...(generative ? { generative } : {}),
    hooks: Object.freeze({
      initialize: typeof prototype.initialize === 'function',
      finalize: typeof prototype.finalize === 'function',
    }),
  });
}

function buildEndpoint(
  target: ModelClass,
  record: EndpointRecord,
  batch: BatchRecord | undefined,
  tag: string,
): EndpointDefinition {
  const id = `${target.name}.${record.method}`;
  if (!record.isFunction) throw createError('SF_ERR_ENDPOINT_NOT_A_METHOD', id);
  if (!record.path.startsWith('/')) throw createError('SF_ERR_ENDPOINT_PATH_INVALID', record.path, id);
  const httpMethod = (record.options.method ?? 'POST').toUpperCase() as HttpMethod;
  if (!HTTP_METHODS.includes(httpMethod)) throw createError('SF_ERR_ENDPOINT_METHOD_INVALID', id, record.options.method);
  const stream = record.options.stream;
  if (stream !== undefined && !STREAM_FORMATS.includes(stream)) throw createError('SF_ERR_STREAM_FORMAT_INVALID', id, String(stream));
  if (stream !== undefined) requireStreamingMethod(id, stream, record.method, (target.prototype as Record<string, unknown>)[record.method]);
  // A stream holds its instance until it ends, so several requests cannot share one call.
  if (stream !== undefined && batch) throw createError('SF_ERR_STREAM_BATCHED', id, stream);
  if (batch && batch.metadataEmitted && batch.firstParamType !== Array) {
    const dto = record.options.body ?? record.options.query;
    throw createError('SF_ERR_BATCH_NOT_LIST', id, dto?.name ?? 'Request');
  }
  for (const role of ['body', 'query', 'params', 'response'] as const) requireDtoRules(id, role, record.options[role]);
  const bodyLimit = record.options.bodyLimit;
  if (bodyLimit !== undefined && (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1)) {
    throw createError('SF_ERR_ENDPOINT_OPTION_INVALID', id, 'bodyLimit', `expected a whole number of bytes >= 1, got ${String(bodyLimit)}`);
  }
  // @fastify/multipart enforces the server's limits on each part, not a route's body limit.
  if (bodyLimit !== undefined && record.options.consumes === 'multipart') {
    throw createError('SF_ERR_ENDPOINT_OPTION_INVALID', id, 'bodyLimit', "it limits JSON bodies; a multipart endpoint's files and fields keep the server's bodyLimit");
  }
  return Object.freeze({
    id,
    methodName: record.method,
    httpMethod,
    path: record.path,
    body: record.options.body,
    query: record.options.query,
    params: record.options.params,
    response: record.options.response,
    consumes: record.options.consumes ?? 'json',
    produces: record.options.produces ?? DEFAULT_PRODUCES,
    summary: record.options.summary,
    description: record.options.description,
    tags: Object.freeze([...(record.options.tags ?? [tag])]),
    status: record.options.status ?? 200,
    ...(stream ? { stream } : {}),
    batch: batch ? normalizeBatchPolicy(batch.policy, id) : undefined,
    ...(bodyLimit !== undefined ? { bodyLimit } : {}),
  });
}

/**
 * Only the function's kind is known before a request: an async function resolves once and a sync
 * generator is not async iterable, so neither can be streamed. A plain method may still return an
 * AsyncIterable; that is checked when it does.
 */
function requireStreamingMethod(id: string, stream: StreamFormat, methodName: string, method: unknown): void {
  const isAsync = types.isAsyncFunction(method);
  const isGenerator = types.isGeneratorFunction(method);
  if (isAsync && !isGenerator) throw createError('SF_ERR_STREAM_NOT_GENERATOR', id, stream, 'an async function, which resolves once', methodName);
  if (isGenerator && !isAsync) throw createError('SF_ERR_STREAM_NOT_GENERATOR', id, stream, 'a sync generator, which is not async iterable', methodName);
}

function buildInstances(target: ModelClass): InstanceGroupDefinition {
  const record = readInstances(target);
  const count = record?.count ?? 1;
  if (!Number.isInteger(count) || count < 1) {
    throw createError('SF_ERR_INSTANCES_INVALID', target.name, `count must be an integer >= 1 (got ${String(count)})`);
  }
  const kind = record?.options.kind ?? 'cpu';
  if (!['cpu', 'gpu', 'npu'].includes(kind)) {
    throw createError('SF_ERR_INSTANCES_INVALID', target.name, `kind must be 'cpu', 'gpu' or 'npu' (got '${kind}')`);
  }
  const devices = record?.options.devices ?? [0];
  if (devices.length === 0 || devices.some((d) => !Number.isInteger(d) || d < 0)) {
    throw createError('SF_ERR_INSTANCES_INVALID', target.name, 'devices must be a non-empty list of device ids >= 0');
  }
  const restartLimit = record?.options.restartLimit;
  const restartPolicy = restartLimit === undefined ? undefined : parseRestartLimit(String(restartLimit));
  if (restartLimit !== undefined && !restartPolicy) throw createError('SF_ERR_INSTANCES_INVALID', target.name, `restartLimit must be ${RESTART_LIMIT_FORM} (got '${String(restartLimit)}')`);
  return Object.freeze({ count, kind, devices: Object.freeze([...devices]), inline: record?.options.inline ?? false, ...(restartPolicy ? { restartPolicy } : {}) });
}

/** `/a/:id` and `/a/:name` are the same route for the router. */
function normalizePath(path: string): string {
  return path.replace(/:[^/]+/g, ':').replace(/\/+$/, '') || '/';
}
