import { FieldError } from './openai-errors.js';

/**
 * Reading the JSON bodies of the OpenAI, Cohere, Jina and vLLM routes by hand, so that a wrong
 * field is refused in the protocol's own error shape (a fastify schema would answer in fastify's).
 * `null` counts as absent where the upstream type is optional (`X | None` in vLLM's pydantic
 * models, `Option<X>` in TEI's serde types).
 */
export type Body = Readonly<Record<string, unknown>>;

export function requestBody(value: unknown): Body {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FieldError('body', 'The request body must be a JSON object');
  return value as Body;
}

export function optionalString(body: Body, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new FieldError(field, `\`${field}\` must be a string`);
  return value;
}

export function requiredString(body: Body, field: string): string {
  const value = optionalString(body, field);
  if (value === undefined) throw new FieldError(field, `\`${field}\` is required`);
  return value;
}

export function optionalBoolean(body: Body, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new FieldError(field, `\`${field}\` must be true or false`);
  return value;
}

/** An integer of at least `min`, or undefined when absent. */
export function optionalInteger(body: Body, field: string, min: number): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) throw new FieldError(field, `\`${field}\` must be an integer of at least ${min}`);
  return value;
}
