import type { FastifyRequest } from 'fastify';
import type { EndpointDefinition } from '../definition/model-definition.js';
import { createError } from '../errors/index.js';
import { validateDto } from '../validation/dto-validator.js';
import type { UploadedFile } from '../validation/uploaded-file.js';
import type { WireRequest, WireRequestInfo } from '../wire/wire-format.js';

/**
 * Reads and validates one HTTP request into what the model method receives: the body DTO (or,
 * for routes without a body, the query DTO) plus path params, query and headers.
 */
export async function readRequest(endpoint: EndpointDefinition, request: FastifyRequest): Promise<WireRequest> {
  const rawBody = endpoint.consumes === 'multipart' ? await readMultipart(request) : request.body;
  const params = endpoint.params
    ? await validateDto(endpoint.params, request.params ?? {}, 'path')
    : ((request.params ?? {}) as Record<string, unknown>);
  const query = endpoint.query
    ? await validateDto(endpoint.query, request.query ?? {}, 'query')
    : ((request.query ?? {}) as Record<string, unknown>);
  let payload: unknown;
  if (endpoint.body) payload = await validateDto(endpoint.body, rawBody ?? {}, 'body', endpoint.consumes === 'multipart');
  else if (endpoint.query) payload = query;
  else payload = rawBody ?? null;
  const info: WireRequestInfo = { requestId: String(request.id), params: { ...params }, query: { ...query }, headers: flattenHeaders(request.headers) };
  return { payload, info };
}

async function readMultipart(request: FastifyRequest): Promise<Record<string, unknown>> {
  if (!request.isMultipart()) {
    throw createError('SF_ERR_UNSUPPORTED_MEDIA_TYPE', request.headers['content-type'] ?? 'none', request.url, 'multipart/form-data');
  }
  const fields: Record<string, unknown> = {};
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        const file: UploadedFile = { filename: part.filename, mimetype: part.mimetype, encoding: part.encoding, data: await part.toBuffer() };
        fields[part.fieldname] = file;
      } else {
        fields[part.fieldname] = part.value;
      }
    }
  } catch (err) {
    const e = err as { code?: string; message: string };
    if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.code === 'FST_PARTS_LIMIT' || e.code === 'FST_FILES_LIMIT') throw err;
    throw createError('SF_ERR_MULTIPART_INVALID', e.message);
  }
  return fields;
}

export function flattenHeaders(headers: FastifyRequest['headers']): Record<string, string> {
  // for...in rather than Object.entries: no [key, value] array per header for each request. Node's
  // headers object has a null prototype (https://nodejs.org/api/http.html#messageheaders), so every key is its own.
  const out: Record<string, string> = {};
  for (const k in headers) {
    const v = headers[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
