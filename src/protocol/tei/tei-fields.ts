import { createError } from '../../errors/index.js';

/**
 * Readers of TEI's request fields (router/src/http/types.rs in huggingface/text-embeddings-inference,
 * docs/openapi.json), written by hand rather than as a JSON schema: TEI's inputs are untagged serde
 * unions (a pair `["a","b"]` and a batch `[["a"],["b"]]` share one field) that a schema validator
 * cannot tell apart, and fastify's ajv coerces types ("true" → true) where serde refuses them.
 * Every reader throws SF_ERR_TEXT_VALIDATION (TEI's 422 "Validation") naming the field.
 */
export type TeiBody = Readonly<Record<string, unknown>>;

/** The body as an object; anything else is a shape error, as serde answers a non-object. */
export function teiBody(value: unknown): TeiBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('the request body must be a JSON object, got ' + describe(value));
  return value as TeiBody;
}

export function required(body: TeiBody, field: string): unknown {
  if (body[field] === undefined) throw invalid(`missing field \`${field}\``);
  return body[field];
}

/** `Option<bool>`: null and absent both mean "not set". */
export function optionalBoolean(body: TeiBody, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw invalid(`\`${field}\` must be a boolean, got ${describe(value)}`);
  return value;
}

/** `bool` with `#[serde(default)]`: absent takes the default, null is refused as serde refuses it. */
export function booleanOr(body: TeiBody, field: string, fallback: boolean): boolean {
  const value = body[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalid(`\`${field}\` must be a boolean, got ${describe(value)}`);
  return value;
}

export function optionalString(body: TeiBody, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`\`${field}\` must be a string, got ${describe(value)}`);
  return value;
}

export function requiredString(body: TeiBody, field: string): string {
  const value = required(body, field);
  if (typeof value !== 'string') throw invalid(`\`${field}\` must be a string, got ${describe(value)}`);
  return value;
}

/** `Option<usize>` (TEI's `dimensions`): whether 0 or too wide is the engine's to say. */
export function optionalCount(body: TeiBody, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalid(`\`${field}\` must be a non-negative integer, got ${describe(value)}`);
  return value;
}

/** TEI's `TruncationDirection`: serde accepts `Left`/`left` and `Right`/`right` only; default right. */
export function truncationDirection(body: TeiBody): 'left' | 'right' | undefined {
  const value = body.truncation_direction;
  if (value === undefined) return undefined;
  if (value === 'Left' || value === 'left') return 'left';
  if (value === 'Right' || value === 'right') return 'right';
  throw invalid(`\`truncation_direction\` must be one of \`Left\`, \`Right\`, got ${describe(value)}`);
}

/** `truncate` and `truncation_direction`, which every inference route takes. */
export function truncation(body: TeiBody): { truncate?: boolean; truncationDirection?: 'left' | 'right' } {
  return { truncate: optionalBoolean(body, 'truncate'), truncationDirection: truncationDirection(body) };
}

export function stringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value)) throw invalid(`\`${field}\` must be an array of strings, got ${describe(value)}`);
  value.forEach((item, i) => {
    if (typeof item !== 'string') throw invalid(`\`${field}[${i}]\` must be a string, got ${describe(item)}`);
  });
  return value as string[];
}

/** /tokenize's `TokenizeInput`: one string or a list of strings (token ids are not accepted there). */
export function tokenizeInputs(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.length === 0) throw createError('SF_ERR_TEXT_EMPTY', '`inputs`');
  return stringList(value, 'inputs');
}

/**
 * /decode's `InputIds`: `[u32]` or `[[u32]]`. serde tries the single form first, so `[]` is one
 * empty id list (decoded to ""), and an empty batch cannot be written.
 */
export function decodeIds(value: unknown): number[][] {
  if (!Array.isArray(value)) throw invalid(`\`ids\` must be an array of token ids or an array of arrays of token ids, got ${describe(value)}`);
  if (value.every((id) => typeof id === 'number')) return [tokenIds(value, 'ids')];
  return value.map((row, i) => {
    if (!Array.isArray(row)) throw invalid(`\`ids[${i}]\` must be an array of token ids, got ${describe(row)}`);
    return tokenIds(row, `ids[${i}]`);
  });
}

function tokenIds(row: readonly unknown[], at: string): number[] {
  row.forEach((id, i) => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffff_ffff) throw invalid(`\`${at}[${i}]\` must be a token id (an integer from 0 to 4294967295), got ${describe(id)}`);
  });
  return row as number[];
}

/** What /predict reads: one text or pair, answered as one list of labels, or a batch, answered as a list of lists. */
export type PredictInputs = { readonly batch: false; readonly input: string | readonly [string, string] } | { readonly batch: true; readonly inputs: (string | readonly [string, string])[] };

const PREDICT_FORMS = 'a string, a pair of strings [string, string] or a batch of mixed strings and pairs [[string], [string, string], ...]';

/**
 * TEI's `PredictInput` visitor: a string is one text; an array starting with a string is one text
 * or ONE pair (`["a","b"]`), never a batch of two; an array starting with an array is a batch whose
 * items are `[text]` or `[text, text]`.
 */
export function predictInputs(value: unknown): PredictInputs {
  if (typeof value === 'string') return { batch: false, input: value };
  if (!Array.isArray(value)) throw invalid(`\`inputs\` must be ${PREDICT_FORMS}, got ${describe(value)}`);
  if (value.length === 0) throw invalid(`\`inputs\`: invalid length 0, expected ${PREDICT_FORMS}`);
  if (typeof value[0] === 'string') return { batch: false, input: sequence(value, 'inputs') };
  return { batch: true, inputs: value.map((item, i) => sequence(item, `inputs[${i}]`)) };
}

function sequence(value: unknown, at: string): string | readonly [string, string] {
  const texts = stringList(value, at);
  if (texts.length === 1) return texts[0];
  if (texts.length === 2) return [texts[0], texts[1]];
  throw invalid(`\`${at}\`: invalid length ${texts.length}, expected ${PREDICT_FORMS}`);
}

/** /similarity's `inputs: {source_sentence, sentences}`. */
export function similarityInputs(value: unknown): { source: string; sentences: string[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`\`inputs\` must be an object with \`source_sentence\` and \`sentences\`, got ${describe(value)}`);
  const inputs = value as TeiBody;
  const source = inputs.source_sentence;
  if (typeof source !== 'string') throw invalid(source === undefined ? 'missing field `inputs.source_sentence`' : `\`inputs.source_sentence\` must be a string, got ${describe(source)}`);
  if (inputs.sentences === undefined) throw invalid('missing field `inputs.sentences`');
  return { source, sentences: stringList(inputs.sentences, 'inputs.sentences') };
}

/** /similarity's optional `parameters` object (`Option<SimilarityParameters>`). */
export function similarityParameters(body: TeiBody): TeiBody {
  const value = body.parameters;
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(`\`parameters\` must be an object, got ${describe(value)}`);
  return value as TeiBody;
}

function invalid(detail: string): Error {
  return createError('SF_ERR_TEXT_VALIDATION', detail);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return typeof value === 'object' ? 'an object' : String(value);
}
