import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { getMetadataStorage } from 'class-validator';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import type { DtoClass } from '../metadata/records.js';

export type JsonSchema = Record<string, unknown>;

const REF_PREFIX = '#/components/schemas/';

/**
 * JSON Schemas of the given DTOs and of every DTO they nest, keyed by class name, with `$ref`s
 * pointing at `#/components/schemas/`, ready for the OpenAPI document. Built once per server start.
 *
 * validationMetadatasToSchemas documents every class in class-validator's global storage, which
 * holds the DTOs of every module imported so far (serve-fn's own adapters included): only those
 * reachable from `roots` are kept, so an app's document shows its own models' schemas only.
 */
export function buildDtoSchemas(roots: readonly DtoClass[]): Record<string, JsonSchema> {
  const all = validationMetadatasToSchemas({
    classValidatorMetadataStorage: getMetadataStorage(),
    // Without class-transformer's @Type records, an array of nested DTOs is documented as `Array`.
    classTransformerMetadataStorage: defaultMetadataStorage,
    refPointerPrefix: REF_PREFIX,
  }) as Record<string, JsonSchema>;
  const selected: Record<string, JsonSchema> = {};
  const pending = roots.map((dto) => dto.name);
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (Object.hasOwn(selected, name) || !Object.hasOwn(all, name)) continue;
    selected[name] = resolveRefs(all[name], all, pending) as JsonSchema;
  }
  return selected;
}

/**
 * Queues the DTOs a schema refers to. A property whose declared type is not a DTO (a union type or
 * a custom validator leaves `Object` as its design type) gets a `$ref` to a class without a schema;
 * it becomes `{}`, any value, as class-validator checks it and the schema cannot say more.
 */
function resolveRefs(node: unknown, all: Record<string, JsonSchema>, pending: string[]): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(item, all, pending));
  if (node === null || typeof node !== 'object') return node;
  const ref = (node as JsonSchema).$ref;
  if (typeof ref === 'string' && ref.startsWith(REF_PREFIX)) {
    const name = ref.slice(REF_PREFIX.length);
    if (!Object.hasOwn(all, name)) return {};
    pending.push(name);
    return node;
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, resolveRefs(value, all, pending)]));
}

export function schemaRef(dto: DtoClass): JsonSchema {
  return { $ref: `${REF_PREFIX}${dto.name}` };
}
