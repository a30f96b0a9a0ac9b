import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsInt, IsString, ValidateNested } from 'class-validator';
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

describe('buildDtoSchemas', () => {
  it('documents every class-validator DTO with component refs, arrays of nested DTOs included', () => {
    const schemas = buildDtoSchemas();
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

  it('points at a DTO component by class name', () => {
    expect(schemaRef(SchemaLine)).toEqual({ $ref: '#/components/schemas/SchemaLine' });
  });
});
