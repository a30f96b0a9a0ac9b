import { createError } from '../../errors/index.js';
import { expectedPhrase, fieldReaders, type FieldProblem, type Fields } from '../../text/request-fields.js';

/**
 * Readers of TEI's request fields (router/src/http/types.rs in huggingface/text-embeddings-inference,
 * docs/openapi.json), written by hand rather than as a JSON schema: TEI's inputs are untagged serde
 * unions (a pair `["a","b"]` and a batch `[["a"],["b"]]` share one field) that a schema validator
 * cannot tell apart, and fastify's ajv coerces types ("true" → true) where serde refuses them.
 * Every reader throws SF_ERR_TEXT_VALIDATION (TEI's 422 "Validation") naming the field; the plain
 * fields are read by the text protocols' shared readers (src/text/request-fields.ts) in TEI's wording.
 */
export type TeiBody = Fields;

/** TEI's wording of serde's errors for a bad field. */
function teiFieldError(problem: FieldProblem): Error {
  if ('missing' in problem) return invalid(`missing field \`${problem.field}\``);
  const { field, expected, value } = problem;
  // serde answers a non-object body as a shape error of the whole body, and names an enum's variants.
  const subject = expected.kind === 'body' ? 'the request body' : `\`${field}\``;
  const phrase = expected.kind === 'direction' ? 'one of `Left`, `Right`' : expectedPhrase(expected);
  return invalid(`${subject} must be ${phrase}, got ${describe(value)}`);
}

const fields = fieldReaders(teiFieldError);

export const { required, optionalBoolean, booleanOr, optionalString, requiredString } = fields;
export const teiBody = fields.body;

/** `Option<usize>` (TEI's `dimensions`): whether 0 or too wide is the engine's to say. */
export function optionalCount(body: TeiBody, field: string): number | undefined {
  return fields.optionalInteger(body, field, 0);
}

/** `truncate` and `truncation_direction`, which every inference route takes. */
export function truncation(body: TeiBody): { truncate?: boolean; truncationDirection?: 'left' | 'right' } {
  return { truncate: optionalBoolean(body, 'truncate'), truncationDirection: fields.truncationDirection(body, { anyCase: false }) };
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
  if (Array.isArray(value) && value.length === 0) throw createError('SF_ERR_TEXT_EMPTY', '`inputs`');
  const texts = typeof value === 'string' ? [value] : stringList(value, 'inputs');
  // TEI's tokenizer refuses an empty text (core/src/tokenization.rs, EncodingInput::is_empty).
  if (texts.includes('')) throw createError('SF_ERR_TEXT_EMPTY', '`inputs`');
  return texts;
}

/**
 * /decode's `InputIds`: `[u32]` or `[[u32]]`. serde tries the single form first, so `[]` is one
 * empty id list, which TEI's tokenizer refuses as it does any empty one ("`input_ids` cannot be empty").
 */
export function decodeIds(value: unknown): number[][] {
  if (!Array.isArray(value)) throw invalid(`\`ids\` must be an array of token ids or an array of arrays of token ids, got ${describe(value)}`);
  const rows = value.every((id) => typeof id === 'number') ? [tokenIds(value, 'ids')] : value.map((row, i) => {
    if (!Array.isArray(row)) throw invalid(`\`ids[${i}]\` must be an array of token ids, got ${describe(row)}`);
    return tokenIds(row, `ids[${i}]`);
  });
  if (rows.some((row) => row.length === 0)) throw createError('SF_ERR_TEXT_EMPTY', '`input_ids`');
  return rows;
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
  return fields.optionalObject(body, 'parameters') ?? {};
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
