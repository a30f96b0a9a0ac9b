import { plainToInstance } from 'class-transformer';
import { validate, type ValidationError } from 'class-validator';
import type { DtoClass } from '../metadata/records.js';

/** One entry of FastAPI's 422 body: `{"detail": [{loc, msg, type, input}]}`. */
export interface ValidationIssue {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
  readonly input?: unknown;
}

export type RequestLocation = 'body' | 'query' | 'path';

export class RequestValidationError extends Error {
  readonly statusCode = 422;
  constructor(readonly detail: readonly ValidationIssue[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'RequestValidationError';
  }
}

/**
 * Turns plain input into a validated DTO instance (class-transformer, then class-validator).
 * Query, path and form values arrive as strings, so those locations convert implicitly by the
 * declared property types, as FastAPI does; JSON bodies keep their JSON types.
 */
export async function validateDto<T extends object>(dto: DtoClass, plain: unknown, location: RequestLocation): Promise<T> {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    throw new RequestValidationError([
      { loc: [location], msg: 'Input should be a valid object', type: 'model_attributes_type', input: plain },
    ]);
  }
  const instance = plainToInstance(dto, plain, { enableImplicitConversion: location !== 'body' }) as T;
  const errors = await validate(instance, { whitelist: true, forbidUnknownValues: false });
  if (errors.length > 0) throw new RequestValidationError(toIssues(errors, [location]));
  return instance;
}

function toIssues(errors: readonly ValidationError[], parent: readonly (string | number)[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const error of errors) {
    const loc = [...parent, asLocPart(error.property)];
    const constraints = Object.entries(error.constraints ?? {});
    if (constraints.length > 0 && error.value === undefined) {
      issues.push({ loc, msg: 'Field required', type: 'missing' });
    } else {
      for (const [type, msg] of constraints) issues.push({ loc, msg, type, input: error.value });
    }
    if (error.children?.length) issues.push(...toIssues(error.children, loc));
  }
  return issues;
}

function asLocPart(property: string): string | number {
  return /^\d+$/.test(property) ? Number(property) : property;
}
