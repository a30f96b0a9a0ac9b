import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsInt, IsString, ValidateBy, ValidateNested } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { buildDtoSchemas, schemaRef } from '../../src/validation/dto-schema.js';

class SchemaLine {
  @IsString() text!: string;
  @IsInt() score!: number;
}

class SchemaPage {
  @ValidateNested({ each: true }) @Type(() => SchemaLine) lines!: SchemaLine[];
  @ValidateNested() @Type(() => SchemaLine) title!: SchemaLine;
}

class SchemaBook {
  @ValidateNested({ each: true }) @Type(() => SchemaPage) pages!: SchemaPage[];
}

/** Another app's DTO in the same process: class-validator's storage is global. */
class UnservedForm {
  @IsString() name!: string;
}

class LooseRange {
  // A union type leaves `Object` as the design type, which is no DTO.
  @ValidateBy({ name: 'isRange', validator: { validate: (v: unknown) => typeof v === 'string' || Array.isArray(v) } })
  range!: string | number[];
}

describe('buildDtoSchemas', () => {
  it('documents the given DTOs with component refs, arrays of nested DTOs included', () => {
    const schemas = buildDtoSchemas([SchemaPage]);
    expect(schemas.SchemaLine).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' }, score: { type: 'integer' } },
      required: ['text', 'score'],
    });
    expect(schemas.SchemaPage.properties).toEqual({
      lines: { type: 'array', items: { $ref: '#/components/schemas/SchemaLine' } },
      title: { $ref: '#/components/schemas/SchemaLine' },
    });
  });

  it('keeps only the given DTOs and those they nest, at any depth, not every class in the storage', () => {
    expect(UnservedForm).toBeDefined();
    expect(Object.keys(buildDtoSchemas([SchemaBook])).sort()).toEqual(['SchemaBook', 'SchemaLine', 'SchemaPage']);
    expect(Object.keys(buildDtoSchemas([SchemaLine]))).toEqual(['SchemaLine']);
    expect(buildDtoSchemas([])).toEqual({});
  });

  it('documents a property whose type is no DTO as any value, not a $ref to Object', () => {
    const schemas = buildDtoSchemas([LooseRange]);
    expect(schemas.LooseRange.properties).toEqual({ range: {} });
    expect(JSON.stringify(schemas)).not.toContain('Object');
  });

  it('points at a DTO component by class name', () => {
    expect(schemaRef(SchemaLine)).toEqual({ $ref: '#/components/schemas/SchemaLine' });
  });
});
