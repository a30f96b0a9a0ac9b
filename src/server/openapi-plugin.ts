import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { EndpointDefinition, ModelDefinition } from '../definition/model-definition.js';
import { ERROR_CATALOGUE } from '../errors/index.js';
import type { DtoClass } from '../metadata/records.js';
import { buildDtoSchemas, type JsonSchema } from '../validation/dto-schema.js';

export type DtoSchemas = Readonly<Record<string, JsonSchema>>;

export interface OpenApiOptions {
  readonly title: string;
  readonly version: string;
  readonly description?: string;
}

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
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
