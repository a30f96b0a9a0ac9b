import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { getMetadataStorage, ValidationTypes } from 'class-validator';
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
    additionalConverters: { [ValidationTypes.NESTED_VALIDATION]: nestedSchema },
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
 * class-validator validates every item of an array under a plain `@ValidateNested()`, but
 * class-validator-jsonschema documents an array only for `{ each: true }`, and otherwise a `$ref` to
 * the item class as if the field held one object: the field's declared type decides here.
 */
function nestedSchema(meta: { target: object | string; propertyName: string; each?: boolean }): JsonSchema {
  if (typeof meta.target !== 'function') return {};
  const declared: unknown = Reflect.getMetadata('design:type', meta.target.prototype, meta.propertyName);
  const item: unknown = defaultMetadataStorage.findTypeMetadata(meta.target, meta.propertyName)?.typeFunction() ?? declared;
  const schema = typeof item === 'function' && item !== Array && item !== Object ? { $ref: `${REF_PREFIX}${item.name}` } : {};
  return declared === Array && meta.each !== true ? { type: 'array', items: schema } : schema;
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
