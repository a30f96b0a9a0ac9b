/**
 * Reading the fields of a text request by hand — a TEI or OpenAI-family JSON body, or the
 * parameters of a KServe v2 infer request — so that a wrong field is answered in the protocol's own
 * error shape (a fastify schema would answer in fastify's, and ajv coerces `"true"` to true where
 * TEI's serde and vLLM's pydantic refuse it). The readers are the same for every protocol; how a bad
 * field is reported (error code, status, wording, OpenAI's `param`) is each protocol's, given as a
 * FieldErrorFactory.
 */
export type Fields = Readonly<Record<string, unknown>>;

/** What a field should have held. */
export type Expected =
  | { readonly kind: 'body' | 'object' | 'string' | 'boolean' | 'direction' }
  /** An integer (a JSON number that is a safe integer) of at least `min` when set. */
  | { readonly kind: 'integer'; readonly min?: number };

/** What `expected` is called in a message, in the words TEI and serve-fn's KServe parameters use; a protocol may word a kind its own way. */
export function expectedPhrase(expected: Expected): string {
  switch (expected.kind) {
    case 'body':
      return 'a JSON object';
    case 'object':
      return 'an object';
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean';
    case 'integer':
      return expected.min === undefined ? 'an integer' : expected.min === 0 ? 'a non-negative integer' : `an integer of at least ${expected.min}`;
    case 'direction':
      return "'left' or 'right'";
  }
}

/** A field that is missing, or holds something other than `expected`. */
export type FieldProblem = { readonly field: string } & ({ readonly missing: true } | { readonly expected: Expected; readonly value: unknown });

/** The protocol's error for a bad field. */
export type FieldErrorFactory = (problem: FieldProblem) => Error;

export interface TruncationSpelling {
  /**
   * TEI's `TruncationDirection` is a serde enum taking `Left`/`left` and `Right`/`right` only;
   * serve-fn's own KServe parameters take either word in any case.
   */
  readonly anyCase: boolean;
}

export interface FieldReaders {
  /** The body as an object; anything else is refused as the `body` field. */
  body(value: unknown): Fields;
  /** The field, which must be there (null is a value, as serde and pydantic take it). */
  required(fields: Fields, field: string): unknown;
  /** An optional object (`Option<T>` / `T | None`): null and absent both mean "not set". */
  optionalObject(fields: Fields, field: string): Fields | undefined;
  optionalString(fields: Fields, field: string): string | undefined;
  requiredString(fields: Fields, field: string): string;
  optionalBoolean(fields: Fields, field: string): boolean | undefined;
  /** serde's `bool` with `#[serde(default)]`: absent takes the default, null is refused. */
  booleanOr(fields: Fields, field: string, fallback: boolean): boolean;
  optionalInteger(fields: Fields, field: string, min?: number): number | undefined;
  /** `truncation_direction` (EncodeOptions.direction); absent is undefined (the engine's default, right). */
  truncationDirection(fields: Fields, spelling: TruncationSpelling): 'left' | 'right' | undefined;
}

/** serde's spellings of TEI's `TruncationDirection` (variant names and their lowercase aliases). */
const SERDE_DIRECTIONS: Readonly<Record<string, 'left' | 'right'>> = { Left: 'left', left: 'left', Right: 'right', right: 'right' };

const isObject = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A field the request itself holds: an inherited member (`constructor`, `toString`) is no field of it. */
const own = (fields: Fields, field: string): unknown => (Object.hasOwn(fields, field) ? fields[field] : undefined);

/** The readers, each throwing the error `fail` makes for a bad field. */
export function fieldReaders(fail: FieldErrorFactory): FieldReaders {
  const required = (fields: Fields, field: string): unknown => {
    const value = own(fields, field);
    if (value === undefined) throw fail({ field, missing: true });
    return value;
  };
  const string = (value: unknown, field: string): string => {
    if (typeof value !== 'string') throw fail({ field, expected: { kind: 'string' }, value });
    return value;
  };
  const boolean = (value: unknown, field: string): boolean => {
    if (typeof value !== 'boolean') throw fail({ field, expected: { kind: 'boolean' }, value });
    return value;
  };
  // Null is "not set" for every optional field: TEI's `Option<T>`, vLLM's `X | None`, OpenAI's nullable fields.
  const optional = <T>(fields: Fields, field: string, read: (value: unknown, field: string) => T): T | undefined => {
    const value = own(fields, field);
    return value === undefined || value === null ? undefined : read(value, field);
  };
  return {
    body(value) {
      if (!isObject(value)) throw fail({ field: 'body', expected: { kind: 'body' }, value });
      return value;
    },
    required,
    optionalObject: (fields, field) =>
      optional(fields, field, (value) => {
        if (!isObject(value)) throw fail({ field, expected: { kind: 'object' }, value });
        return value;
      }),
    optionalString: (fields, field) => optional(fields, field, string),
    requiredString: (fields, field) => string(required(fields, field), field),
    optionalBoolean: (fields, field) => optional(fields, field, boolean),
    booleanOr: (fields, field, fallback) => {
      const value = own(fields, field);
      return value === undefined ? fallback : boolean(value, field);
    },
    optionalInteger: (fields, field, min) =>
      optional(fields, field, (value) => {
        if (typeof value !== 'number' || !Number.isSafeInteger(value) || (min !== undefined && value < min)) throw fail({ field, expected: { kind: 'integer', min }, value });
        return value;
      }),
    truncationDirection(fields, { anyCase }) {
      const value = own(fields, 'truncation_direction');
      if (value === undefined) return undefined;
      const word = typeof value !== 'string' ? undefined : anyCase ? value.toLowerCase() : Object.hasOwn(SERDE_DIRECTIONS, value) ? SERDE_DIRECTIONS[value] : undefined;
      if (word === 'left' || word === 'right') return word;
      throw fail({ field: 'truncation_direction', expected: { kind: 'direction' }, value });
    },
  };
}
