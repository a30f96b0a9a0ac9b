import swagger from '@fastify/swagger';
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifySchema } from 'fastify';
import type { EndpointDefinition, ModelDefinition } from '../definition/model-definition.js';
import { createError, ERROR_CATALOGUE, type SfErrorCode } from '../errors/index.js';
import type { DtoClass } from '../metadata/records.js';
import { buildDtoSchemas, type JsonSchema } from '../validation/dto-schema.js';

export type DtoSchemas = Readonly<Record<string, JsonSchema>>;

export interface OpenApiOptions {
  readonly title: string;
  readonly version: string;
  readonly description?: string;
  /** Whether the KServe v2 and shared-memory routes are in the document (default true). */
  readonly kserveRoutes?: boolean;
  /** Whether Swagger UI and /openapi.json are served (default true); the schemas are registered either way, as routes use them. */
  readonly served?: boolean;
}

/** The tags of the protocol routes every server has, which Swagger UI lists collapsed (collapseProtocolTags). */
const PROTOCOL_TAG_PREFIX = 'KServe v2';

/** JSON Schemas of the DTOs the served models use, with refs rewritten to fastify's shared-schema form (`Name#`). */
export function collectDtoSchemas(definitions: readonly ModelDefinition[]): DtoSchemas {
  const dtos = definitions.flatMap((def) => [
    ...def.endpoints.flatMap((e) => [e.body, e.query, e.params, e.response]),
    ...def.sockets.flatMap((s) => [s.message, s.response]),
  ]);
  const raw = buildDtoSchemas(dtos.filter((dto): dto is DtoClass => dto !== undefined));
  return Object.fromEntries(Object.entries(raw).map(([name, schema]) => [name, rewriteRefs(schema) as JsonSchema]));
}

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === '$ref' && typeof v === 'string' ? `${v.replace('#/components/schemas/', '')}#` : rewriteRefs(v);
  }
  return out;
}

export function inlineSchema(schemas: DtoSchemas, dto: DtoClass): JsonSchema {
  return schemas[dto.name] ?? { type: 'object' };
}

export function describeBatching(endpoint: EndpointDefinition): string {
  const b = endpoint.batch;
  if (!b) return 'Not batched: each request runs on its own.';
  const parts = [`max batch size ${b.maxBatchSize}`, `max queue delay ${b.maxQueueDelayUs} µs`];
  if (b.preferredBatchSizes.length) parts.push(`preferred sizes ${b.preferredBatchSizes.join(', ')}`);
  if (b.priorityLevels) parts.push(`${b.priorityLevels} priority levels`);
  if (b.defaultQueuePolicy.maxQueueSize) parts.push(`queue limit ${b.defaultQueuePolicy.maxQueueSize}`);
  if (b.defaultQueuePolicy.defaultTimeoutUs) parts.push(`queue timeout ${b.defaultQueuePolicy.defaultTimeoutUs} µs (${b.defaultQueuePolicy.timeoutAction})`);
  return `**Dynamic batching:** ${parts.join(', ')}.`;
}

const ERROR_BODY: JsonSchema = {
  $id: 'ErrorBody',
  type: 'object',
  properties: {
    error: { type: 'string' },
    code: { type: 'string', enum: Object.keys(ERROR_CATALOGUE) },
    request_id: { type: 'string', description: 'On server faults: the id the full error is logged under, also sent as the `x-request-id` header.' },
  },
  required: ['error', 'code'],
};

const VALIDATION_ERROR_BODY: JsonSchema = {
  $id: 'ValidationErrorBody',
  type: 'object',
  properties: {
    detail: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
          msg: { type: 'string' },
          type: { type: 'string' },
          input: {},
        },
        required: ['loc', 'msg', 'type'],
      },
    },
  },
};

interface ErrorStatusDoc {
  readonly description: string;
  /** The code of the example body on the route at `path`, with the arguments that fill its catalogue message. */
  readonly example: (path: string) => readonly [SfErrorCode, ...string[]];
}

/**
 * What an error status means on serve-fn's own routes (docs/errors.md lists every code), shown in
 * place of @fastify/swagger's "Default Response"; the example answers it there. Without one, Swagger
 * UI would build the example from the `code` enum's first value, a start-up error no request meets.
 */
const ENDPOINT_ERRORS: Readonly<Record<number, ErrorStatusDoc>> = {
  400: { description: 'Bad Request: the request cannot be read, or the model refused its input.', example: () => ['SF_ERR_BAD_REQUEST', 'the model refused the input: <its message>'] },
  401: { description: 'Unauthorized: the API key is missing or wrong.', example: () => ['SF_ERR_UNAUTHORIZED'] },
  404: { description: 'Not Found.', example: () => ['SF_ERR_NOT_FOUND'] },
  413: { description: 'Payload Too Large: the body is over the limit.', example: () => ['SF_ERR_BODY_TOO_LARGE', '1048576'] },
  415: { description: 'Unsupported Media Type: the body is not of a content type the endpoint reads.', example: (path) => ['SF_ERR_UNSUPPORTED_MEDIA_TYPE', 'text/plain', path, 'application/json'] },
  429: { description: 'Too Many Requests: over the rate limit.', example: () => ['SF_ERR_RATE_LIMITED', '100', '60000', '12'] },
  500: {
    description: 'Internal Server Error: the model failed while running the request (`SF_ERR_EXECUTION_FAILED`) or its instance stopped (`SF_ERR_INSTANCE_CRASHED`).',
    example: (path) => ['SF_ERR_EXECUTION_FAILED', '<model>', path, '<what the model threw>'],
  },
  503: {
    description:
      'Service Unavailable: the queue is full (`SF_ERR_QUEUE_FULL`), the request waited past its timeout (`SF_ERR_TIMEOUT`), the server is shutting down (`SF_ERR_DRAINING`) or no instance of the model is left (`SF_ERR_INSTANCE_RESTART_LIMIT`). Retry later, or elsewhere.',
    example: () => ['SF_ERR_QUEUE_FULL'],
  },
};

/** WebSocket routes answer HTTP only when they refuse the upgrade. */
const SOCKET_ERRORS: Readonly<Record<number, ErrorStatusDoc>> = {
  ...ENDPOINT_ERRORS,
  426: { description: 'Upgrade Required: a plain HTTP request reached a WebSocket route.', example: (path) => ['SF_ERR_UPGRADE_REQUIRED', path] },
  503: {
    description: 'Service Unavailable, before the upgrade: the route has as many connections open as it takes (`SF_ERR_SOCKET_LIMIT`), or the server is shutting down (`SF_ERR_DRAINING`).',
    example: (path) => ['SF_ERR_SOCKET_LIMIT', path, '<maxConnections>'],
  },
};

const VALIDATION_ERROR_EXAMPLE = { detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }] };

/** An OpenAPI response entry for one status: FastAPI's names for success and validation failures. */
function describeResponse(status: number, entry: JsonSchema, path: string, errors: Readonly<Record<number, ErrorStatusDoc>>): JsonSchema {
  if (typeof entry.description === 'string') return entry;
  if (status >= 200 && status < 300) return { ...entry, description: 'Successful Response' };
  if (entry.$ref === 'ValidationErrorBody#') return { description: 'Validation Error', content: { 'application/json': { schema: entry, example: VALIDATION_ERROR_EXAMPLE } } };
  const doc = errors[status];
  if (!doc) return { ...entry, description: STATUS_CODES[status] ?? `HTTP ${status}` };
  const [code, ...args] = doc.example(path);
  return errorResponse(doc.description, code, ...args);
}

/**
 * A response entry with serve-fn's error body, whose example is the error `code` makes. It is in
 * the per-content-type form, which both fastify (to serialize) and @fastify/swagger read: the
 * latter drops keywords beside a `$ref`, an example among them.
 */
export function errorResponse(description: string, code: SfErrorCode, ...args: string[]): JsonSchema {
  return { description, content: { 'application/json': { schema: { $ref: 'ErrorBody#' }, example: { error: createError(code, ...args).message, code } } } };
}

function isProtocolRoute(schema: FastifySchema | undefined): boolean {
  const tags = (schema as { tags?: unknown } | undefined)?.tags;
  return Array.isArray(tags) && tags.some((tag) => typeof tag === 'string' && tag.startsWith(PROTOCOL_TAG_PREFIX));
}

/**
 * @fastify/swagger's per-route hook: it documents, and leaves the schemas fastify serializes with
 * untouched. Without `kserveRoutes` the protocol routes are left out, as FastAPI's
 * `include_in_schema=False` leaves a route out: they still answer.
 */
function documentRoutes(kserveRoutes: boolean) {
  return ({ schema, url }: { schema: FastifySchema; url: string }): { schema: FastifySchema; url: string } =>
    !kserveRoutes && isProtocolRoute(schema) ? { schema: { ...schema, hide: true } as FastifySchema, url } : documentResponses({ schema, url });
}

function documentResponses({ schema, url }: { schema: FastifySchema; url: string }): { schema: FastifySchema; url: string } {
  const response = schema?.response as Record<string, JsonSchema> | undefined;
  if (!response) return { schema, url };
  const errors = 'x-websocket' in schema ? SOCKET_ERRORS : ENDPOINT_ERRORS;
  const described = Object.fromEntries(Object.entries(response).map(([status, entry]) => [status, describeResponse(Number(status), entry, url, errors)]));
  return { schema: { ...schema, response: described }, url };
}

/*
 * Swagger UI plugins (its plugin API: statePlugins, wrapSelectors). @fastify/swagger-ui writes them
 * into the page as source text, so each stands alone and names only what the page defines.
 */
declare const SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => object } };

/** Loads the document from `url`; the page's own configuration lists it, and `plugins` replaces that list. */
function downloadUrl(system: unknown): object {
  return SwaggerUIBundle.plugins.DownloadUrl(system);
}

/**
 * No "Try it out" on routes marked `x-websocket`: Swagger UI sends plain HTTP requests, which a
 * WebSocket route answers 426, so the button could only ever show that error.
 */
function noTryItOutOnWebSockets(): object {
  type Spec = { hasIn(path: readonly string[]): boolean };
  type System = { specSelectors: { specJson(): Spec } };
  return {
    statePlugins: {
      spec: {
        wrapSelectors: {
          allowTryItOutFor: (original: (path: string, method: string) => boolean, system: System) => (_state: unknown, path: string, method: string) =>
            !system.specSelectors.specJson().hasIn(['paths', path, method, 'x-websocket']) && original(path, method),
        },
      },
    },
  };
}

/**
 * The KServe v2 tags start collapsed (Swagger UI's layout state, keyed `operations-tag`): a service
 * with two endpoints of its own also answers some thirty protocol routes, which would fill the page.
 * A click opens them as any tag.
 */
function collapseProtocolTags(): object {
  type Shown = (thing: readonly string[], fallback?: boolean) => boolean;
  return {
    statePlugins: {
      layout: {
        wrapSelectors: {
          isShown: (original: Shown) => (_state: unknown, thing: readonly string[], fallback?: boolean) =>
            original(thing, thing[0] === 'operations-tag' && String(thing[1]).startsWith('KServe v2') ? false : fallback),
        },
      },
    },
  };
}

/** OpenAPI 3 at /openapi.json and Swagger UI at /docs; DTO schemas become named components. */
export async function registerOpenApi(app: FastifyInstance, schemas: DtoSchemas, options: OpenApiOptions): Promise<void> {
  for (const [name, schema] of Object.entries(schemas)) app.addSchema({ ...schema, $id: name });
  app.addSchema(ERROR_BODY);
  app.addSchema(VALIDATION_ERROR_BODY);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: options.title, version: options.version, description: options.description },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: documentRoutes(options.kserveRoutes ?? true),
  });
  if (options.served === false) return;
  // Imported only when /docs is served (--docs off leaves it out): its static-file serving and assets stay unloaded.
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // The browser tab reads as FastAPI's does.
    theme: { title: `${options.title} - Swagger UI` },
    // FastAPI's layout: no top bar, so neither fastify's logo nor an "Explore" box with /docs/json.
    uiConfig: { layout: 'BaseLayout', plugins: [downloadUrl, noTryItOutOnWebSockets, collapseProtocolTags] },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
