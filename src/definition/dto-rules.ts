import { getMetadataStorage } from 'class-validator';
import { createError } from '../errors/index.js';
import type { DtoClass } from '../metadata/records.js';

/**
 * What a DTO without class-validator rules would do where it is named. Inputs are validated with
 * `whitelist`, and the OpenAPI schema (which also filters the response, as FastAPI's
 * `response_model` does) is generated from those rules: a class without any is silently empty.
 */
const CONSEQUENCE = {
  body: 'every field of the request body would be dropped',
  query: 'every query parameter would be dropped',
  params: 'every path parameter would be dropped',
  message: "every field of the client's messages would be dropped",
  response: 'its fields would be neither documented nor sent',
} as const;

export type DtoRole = keyof typeof CONSEQUENCE;

/** Refuses, at start-up, a DTO that has no class-validator decorator on it or its base classes. */
export function requireDtoRules(id: string, role: DtoRole, dto: DtoClass | undefined): void {
  if (dto === undefined) return;
  if (getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false).length > 0) return;
  throw createError('SF_ERR_DTO_NOT_DECORATED', id, role, dto.name, CONSEQUENCE[role]);
}
