import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import { getMetadataStorage } from 'class-validator';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import type { DtoClass } from '../metadata/records.js';

export type JsonSchema = Record<string, unknown>;

/**
 * JSON Schemas of every class-validator DTO, keyed by class name, with `$ref`s pointing at
 * `#/components/schemas/`, ready for the OpenAPI document. Built once per server start.
 */
export function buildDtoSchemas(): Record<string, JsonSchema> {
  return validationMetadatasToSchemas({
    classValidatorMetadataStorage: getMetadataStorage(),
    // Without class-transformer's @Type records, an array of nested DTOs is documented as `Array`.
    classTransformerMetadataStorage: defaultMetadataStorage,
    refPointerPrefix: '#/components/schemas/',
  }) as Record<string, JsonSchema>;
}

export function schemaRef(dto: DtoClass): JsonSchema {
  return { $ref: `#/components/schemas/${dto.name}` };
}
