import { createError } from '../errors/index.js';
import type { BatchRecord, EndpointRecord, WebSocketEndpointRecord } from '../metadata/records.js';
import { requireDtoRules } from './dto-rules.js';
import type { ModelClass, SocketEndpointDefinition } from './model-definition.js';

export const DEFAULT_SOCKET_IDLE_TIMEOUT_MS = 60_000;
export const DEFAULT_SOCKET_MAX_CONNECTIONS = 1024;

/** Checks and freezes one @WebSocketEndpoint record (the second phase of its metadata). */
export function buildSocketEndpoint(
  target: ModelClass,
  record: WebSocketEndpointRecord,
  others: { readonly endpoints: readonly EndpointRecord[]; readonly batches: readonly BatchRecord[] },
  tag: string,
): SocketEndpointDefinition {
  const id = `${target.name}.${record.method}`;
  if (!record.isFunction) throw createError('SF_ERR_SOCKET_NOT_A_METHOD', id);
  if (!record.path.startsWith('/')) throw createError('SF_ERR_ENDPOINT_PATH_INVALID', record.path, id);
  if (others.endpoints.some((e) => e.method === record.method)) throw createError('SF_ERR_SOCKET_AND_ENDPOINT', id, '@Endpoint');
  if (others.batches.some((b) => b.method === record.method)) throw createError('SF_ERR_SOCKET_AND_ENDPOINT', id, '@Batch');
  const { options } = record;
  requireDtoRules(id, 'message', options.message);
  requireDtoRules(id, 'response', options.response);
  return Object.freeze({
    id,
    methodName: record.method,
    path: record.path,
    message: options.message,
    response: options.response,
    idleTimeoutMs: positiveInteger(id, 'idleTimeoutMs', options.idleTimeoutMs ?? DEFAULT_SOCKET_IDLE_TIMEOUT_MS),
    maxConnections: positiveInteger(id, 'maxConnections', options.maxConnections ?? DEFAULT_SOCKET_MAX_CONNECTIONS),
    summary: options.summary,
    description: options.description,
    tags: Object.freeze([...(options.tags ?? [tag])]),
  });
}

function positiveInteger(id: string, option: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw createError('SF_ERR_SOCKET_OPTION_INVALID', id, option, `expected an integer >= 1, got ${String(value)}`);
  return value;
}
