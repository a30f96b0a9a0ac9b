import { FieldError, optionalBoolean, optionalObject, optionalString, requestBody } from './openai-fields.js';

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : JSON.stringify(value);
}

/**
 * A generation request's JSON body, read field by field: each reader checks the field's type and
 * range (a 400 naming it, OpenAI's `param`) and records that it was read, so that the fields no
 * reader took are known and can be named in the answer (`x-serve-fn-ignored-fields`) rather than
 * silently dropped, which vLLM does (its models accept and ignore unknown fields; vllm-project/vllm#53975).
 * `null` counts as absent, as for vLLM's optional fields.
 */
export class RequestFields {
  readonly body: Readonly<Record<string, unknown>>;
  private readonly read = new Set<string>();

  constructor(raw: unknown) {
    this.body = requestBody(raw);
  }

  /** The value of a field, marked as read; undefined when absent or null. */
  take(field: string): unknown {
    this.read.add(field);
    // Only the body's own fields: `constructor` or `toString` in a request are no inherited members.
    const value = Object.hasOwn(this.body, field) ? this.body[field] : undefined;
    return value === null ? undefined : value;
  }

  has(field: string): boolean {
    return this.body[field] !== undefined && this.body[field] !== null;
  }

  /** The fields present in the body that nothing read, in body order. */
  unread(): string[] {
    return Object.keys(this.body).filter((field) => !this.read.has(field));
  }

  // The typed readers are the OpenAI family's shared ones (openai-fields.ts); this class adds the record of what was read.
  string(field: string): string | undefined {
    this.read.add(field);
    return optionalString(this.body, field);
  }

  boolean(field: string): boolean | undefined {
    this.read.add(field);
    return optionalBoolean(this.body, field);
  }

  /** A number within [min, max]; `rule` words the range as vLLM's SamplingParams checks do. */
  number(field: string, check?: { ok: (value: number) => boolean; rule: string }): number | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new FieldError(field, `\`${field}\` must be a number, got ${describe(value)}`);
    if (check && !check.ok(value)) throw new FieldError(field, `${field} must be ${check.rule}, got ${value}.`);
    return value;
  }

  integer(field: string, check?: { ok: (value: number) => boolean; rule: string }): number | undefined {
    const value = this.number(field, check);
    if (value !== undefined && !Number.isSafeInteger(value)) throw new FieldError(field, `\`${field}\` must be an integer, got ${value}`);
    return value;
  }

  object(field: string): Readonly<Record<string, unknown>> | undefined {
    this.read.add(field);
    return optionalObject(this.body, field);
  }

  array(field: string): readonly unknown[] | undefined {
    const value = this.take(field);
    if (value === undefined || Array.isArray(value)) return value;
    throw new FieldError(field, `\`${field}\` must be an array, got ${describe(value)}`);
  }

  /** A string or a list of strings (`stop`). */
  strings(field: string): string[] | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (typeof value === 'string') return [value];
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
    throw new FieldError(field, `\`${field}\` must be a string or a list of strings`);
  }

  integers(field: string): number[] | undefined {
    const value = this.take(field);
    if (value === undefined) return undefined;
    if (Array.isArray(value) && value.every((v) => Number.isSafeInteger(v) && (v as number) >= 0)) return value as number[];
    throw new FieldError(field, `\`${field}\` must be a list of token ids (non-negative integers)`);
  }
}

/** Sets the header naming what a request carried and serve-fn did not use; a proxy or client can log it. */
export const IGNORED_FIELDS_HEADER = 'x-serve-fn-ignored-fields';
