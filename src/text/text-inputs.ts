import { createError } from '../errors/index.js';

/** A text, or token ids used as given (no special tokens added), as TEI and OpenAI accept them. */
export type TextInput = string | readonly number[];

export interface TextInputRules {
  /** The field's name in the protocol, for messages (`inputs` for TEI, `input` for OpenAI). */
  readonly field: string;
  /** OpenAI refuses "" ("'$.input' is invalid"); TEI embeds it as its special tokens alone. */
  readonly allowEmptyString: boolean;
}

/**
 * The input forms of TEI's untagged `Input` (router/src/http/types.rs) and OpenAI's
 * `input: string | string[] | number[] | number[][]`: one string, one array of token ids, or an
 * array mixing strings and id arrays. A bare array of numbers is one tokenized input, never
 * several. Throws SF_ERR_TEXT_EMPTY for an empty list and SF_ERR_TEXT_VALIDATION for anything else
 * that is not one of these forms.
 */
export function parseTextInputs(value: unknown, rules: TextInputRules): TextInput[] {
  const { field } = rules;
  if (typeof value === 'string') return [checkedText(value, field, rules)];
  if (!Array.isArray(value)) throw createError('SF_ERR_TEXT_VALIDATION', `\`${field}\` must be a string, an array of token ids, or an array of strings and token-id arrays`);
  if (value.length === 0) throw createError('SF_ERR_TEXT_EMPTY', `\`${field}\``);
  if (value.every((item) => typeof item === 'number')) return [tokenIds(value, field)];
  return value.map((item, index) => {
    const at = `${field}[${index}]`;
    if (typeof item === 'string') return checkedText(item, at, rules);
    if (Array.isArray(item)) {
      if (item.length === 0) throw createError('SF_ERR_TEXT_EMPTY', `\`${at}\``);
      return tokenIds(item, at);
    }
    throw createError('SF_ERR_TEXT_VALIDATION', `\`${at}\` must be a string or an array of token ids, got ${describe(item)}`);
  });
}

/** Token ids are unsigned 32-bit integers (TEI's u32); whether each is in the vocabulary is the tokenizer's to say. */
function tokenIds(items: readonly unknown[], at: string): number[] {
  items.forEach((id, i) => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffff_ffff) {
      throw createError('SF_ERR_TEXT_VALIDATION', `\`${at}[${i}]\` must be a token id (an integer from 0), got ${describe(id)}`);
    }
  });
  return items as number[];
}

function checkedText(text: string, at: string, rules: TextInputRules): string {
  // Whether the text is valid Unicode is the engine's to say, as for every text route (text-characters.ts).
  if (text === '' && !rules.allowEmptyString) throw createError('SF_ERR_TEXT_EMPTY', `\`${at}\``);
  return text;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value === 'object' ? 'an object' : String(value);
}
