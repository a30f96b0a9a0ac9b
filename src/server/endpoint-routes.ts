import type { FastifyInstance, FastifySchema } from 'fastify';
import { DEFAULT_PRODUCES } from '../definition/definition-builder.js';
import type { EndpointDefinition, ModelDefinition } from '../definition/model-definition.js';
import type { StreamFormat } from '../metadata/records.js';
import { createError, ServeFnError, statusOf } from '../errors/index.js';
import type { ModelRuntime } from '../inference/model-runtime.js';
import { dtoSchemaCheck } from '../validation/dto-schema-check.js';
import { disconnectSignal, type DisconnectSignal } from './disconnect-signal.js';
import { logFailure, toHttpError, type ErrorBody, type HttpError } from './error-handler.js';
import { describeBatching, inlineSchema, type DtoSchemas } from './openapi-plugin.js';
import { readRequest } from './request-reader.js';
import { requestTrace } from '../tracing/request-tracing.js';
import type { TraceSettings } from '../tracing/trace-settings.js';
import type { ServerState } from './server-state.js';
import { sendStream, streamContentType } from './stream-writer.js';

export interface EndpointRoutesOptions {
  readonly runtimes: readonly ModelRuntime[];
  /** Which requests get their model's spans (Triton's trace settings); all traced ones when absent. */
  readonly traceSettings?: TraceSettings;
  readonly state: ServerState;
  readonly schemas: DtoSchemas;
  /** Largest body of a JSON endpoint without a bodyLimit of its own; multipart endpoints keep `bodyLimit`. */
  readonly jsonBodyLimit: number;
  /** The server's body limit, which no endpoint's own limit goes above. */
  readonly bodyLimit: number;
  /** Whether a stream that fails after its first chunk shows the error's message (development). */
  readonly exposeErrors: boolean;
}

/** Registers each model's @Endpoint methods as fastify routes that validate, queue and answer. */
export async function endpointRoutes(app: FastifyInstance, opts: EndpointRoutesOptions): Promise<void> {
  for (const runtime of opts.runtimes) {
    for (const endpoint of runtime.definition.endpoints) registerEndpoint(app, runtime, endpoint, opts);
  }
}

/**
 * What the runtime answered for a queued request, its error as the endpoint's; the connection is no
 * longer watched once it has. A function of the module, not a closure made for every request.
 */
async function answered<T>(model: ModelDefinition, endpoint: EndpointDefinition, disconnect: DisconnectSignal, pending: Promise<T>): Promise<T> {
  try {
    return await pending;
  } catch (err) {
    throw asEndpointError(model, endpoint, err);
  } finally {
    disconnect.release();
  }
}

function registerEndpoint(app: FastifyInstance, runtime: ModelRuntime, endpoint: EndpointDefinition, opts: EndpointRoutesOptions): void {
  const model = runtime.definition;
  const { state } = opts;
  // Compiles each DTO's check (or finds it has none) at start, not on the endpoint's first request.
  for (const dto of [endpoint.body, endpoint.query, endpoint.params]) if (dto) dtoSchemaCheck(dto);
  app.route({
    method: endpoint.httpMethod,
    url: endpoint.path,
    schema: routeSchema(model, endpoint, opts.schemas),
    ...(endpoint.consumes === 'json' ? { bodyLimit: Math.min(endpoint.bodyLimit ?? opts.jsonBodyLimit, opts.bodyLimit) } : {}),
    // readRequest validates (dto-validator: a compiled check, class-validator for the rest and for the
    // FastAPI-shaped 422s); fastify's own validation would answer 400s of another shape.
    validatorCompiler: () => () => true,
    handler: async (request, reply) => {
      if (!state.ready) throw createError('SF_ERR_DRAINING');
      const wire = await readRequest(endpoint, request);
      const disconnect = disconnectSignal(reply);
      const trace = requestTrace(request);
      const options = { signal: disconnect, trace: opts.traceSettings ? opts.traceSettings.admit(model.name, trace) : trace, ...scheduling(request.headers) };
      if (endpoint.stream) {
        const channel = await answered(model, endpoint, disconnect, runtime.openStream(endpoint.methodName, wire, options));
        if (disconnect.aborted) {
          channel.cancel();
          throw createError('SF_ERR_CANCELLED');
        }
        return sendStream(reply, endpoint, channel, (err) => {
          const failure = asEndpointError(model, endpoint, err);
          const answer = toHttpError(failure, { bodyLimit: 0, exposeErrors: opts.exposeErrors, requestId: request.id });
          logFailure(request, failure, answer);
          return streamErrorBody(failure, answer.body);
        });
      }
      const value = await answered(model, endpoint, disconnect, runtime.submit(endpoint.methodName, wire, options));
      reply.code(endpoint.status);
      if (Buffer.isBuffer(value)) return reply.type(endpoint.produces).send(value);
      return value ?? null;
    },
  });
}

/**
 * Per-request scheduling for user endpoints, the equivalent of the inference protocol's `priority`
 * and `timeout` parameters; the batcher checks their ranges against the endpoint's policy.
 */
export const PRIORITY_HEADER = 'serve-fn-priority';
export const TIMEOUT_HEADER = 'serve-fn-timeout-us';

function scheduling(headers: Record<string, string | string[] | undefined>): { priority?: number; timeoutUs?: number } {
  const read = (name: string): number | undefined => {
    const raw = headers[name];
    if (raw === undefined || Array.isArray(raw)) return undefined;
    return raw.trim() === '' ? Number.NaN : Number(raw);
  };
  return { priority: read(PRIORITY_HEADER), timeoutUs: read(TIMEOUT_HEADER) };
}

/** A model's own failure as SF_ERR_EXECUTION_FAILED, keeping it as `cause`: its stack names the model's file and line. */
function asEndpointError(model: ModelDefinition, endpoint: EndpointDefinition, err: unknown): unknown {
  if (err instanceof ServeFnError) return err;
  if (statusOf(err) < 500) return err;
  return Object.assign(createError('SF_ERR_EXECUTION_FAILED', model.name, endpoint.id, (err as Error)?.message ?? String(err)), { cause: err });
}

/** A stream's error line is `{error, code}` even for a 422, whose details become the message. */
function streamErrorBody(err: unknown, body: HttpError['body']): ErrorBody {
  return 'error' in body ? body : { error: (err as Error).message, code: 'SF_ERR_BAD_REQUEST' };
}

const STREAM_DESCRIPTIONS = {
  sse: 'Server-sent events: one `data: <json>` event per item; the stream ends with the response. A failure after the first item sends `event: error` with `{"error", "code"}`.',
  ndjson: 'Newline-delimited JSON: one item per line. A failure after the first item ends the stream with an `{"error", "code"}` line.',
  bytes: 'Raw bytes, sent chunk by chunk as the model produces them. A failure after the first chunk breaks the connection.',
} as const;

function streamResponseSchema(endpoint: EndpointDefinition, format: StreamFormat): Record<string, unknown> {
  const schema = format === 'bytes' ? { type: 'string', format: 'binary' } : { type: 'string' };
  return { description: STREAM_DESCRIPTIONS[format], content: { [streamContentType(endpoint)]: { schema } } };
}

/** A media type whose body is JSON (RFC 6839's `+json` suffix included). */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]*\+)?json\b/i;

/**
 * The success answer of an endpoint without a response DTO, as the handler sends it: a Buffer result
 * as `produces`, any other value as JSON. With `produces` left at its default, both can happen.
 */
function untypedResponseSchema(endpoint: EndpointDefinition): Record<string, unknown> {
  // @fastify/swagger's way of saying that the answer has no body.
  if (endpoint.status === 204) return { type: 'null', description: 'Successful Response: no content.' };
  const json = { 'application/json': { schema: {} } };
  if (JSON_MEDIA_TYPE.test(endpoint.produces)) return { content: { [endpoint.produces]: { schema: {} } } };
  const binary = { [endpoint.produces]: { schema: { type: 'string', format: 'binary' } } };
  return { content: endpoint.produces === DEFAULT_PRODUCES ? { ...json, ...binary } : binary };
}

function routeSchema(model: ModelDefinition, endpoint: EndpointDefinition, schemas: DtoSchemas): FastifySchema {
  // A class without class-validator decorators has no schema to point at.
  const ref = (dto: { name: string }): Record<string, unknown> => (schemas[dto.name] ? { $ref: `${dto.name}#` } : { type: 'object' });
  const description = [endpoint.description, model.description && `Model **${model.name}** v${model.version}: ${model.description}.`, describeBatching(endpoint)]
    .filter(Boolean)
    .join('\n\n');
  const schema: Record<string, unknown> = {
    summary: endpoint.summary ?? `${model.name}.${endpoint.methodName}`,
    description,
    tags: [...endpoint.tags],
    operationId: `${model.name}_${endpoint.methodName}`,
  };
  if (endpoint.body) schema.body = ref(endpoint.body);
  if (endpoint.consumes === 'multipart') schema.consumes = ['multipart/form-data'];
  // Swagger turns querystring and params into one parameter per property, which needs them inline.
  if (endpoint.query) schema.querystring = inlineSchema(schemas, endpoint.query);
  if (endpoint.params) schema.params = inlineSchema(schemas, endpoint.params);
  const errorRef = { $ref: 'ErrorBody#' };
  schema.response = {
    ...(endpoint.stream
      ? { [endpoint.status]: streamResponseSchema(endpoint, endpoint.stream) }
      : endpoint.response && schemas[endpoint.response.name]
        ? { [endpoint.status]: ref(endpoint.response) }
        : { [endpoint.status]: untypedResponseSchema(endpoint) }),
    422: { $ref: 'ValidationErrorBody#' },
    500: errorRef,
    503: errorRef,
  };
  return schema as FastifySchema;
}
