import { createError } from '../errors/index.js';

/**
 * Tokens of protobuf text format, the syntax of Triton's config.pbtxt
 * (https://protobuf.dev/reference/protobuf/textformat-spec/). Hand-written because no maintained
 * npm package reads text format: protobufjs and its peers parse .proto schemas, binary and JSON.
 * The grammar is small, and owning it lets every error carry the file, line and column.
 *
 * Lines and columns are 1-based; a tab counts as one column.
 */
export type PbtxtTokenKind = 'identifier' | 'string' | 'integer' | 'float' | 'punct' | 'eof';

export interface PbtxtToken {
  readonly kind: PbtxtTokenKind;
  /** Identifiers, numbers and punctuation: the source text. Strings: the decoded value. */
  readonly text: string;
  readonly line: number;
  readonly column: number;
}

const PUNCTUATION = new Set(['{', '}', '[', ']', '<', '>', ':', ',', ';', '-']);
const IDENTIFIER_START = /[A-Za-z_]/;
const WORD_CHAR = /[A-Za-z0-9_.]/;
const DECIMAL_INTEGER = /^(?:0|[1-9][0-9]*)$/;
const OCTAL_INTEGER = /^0[0-7]+$/;
const HEX_INTEGER = /^0[xX][0-9A-Fa-f]+$/;
const FLOAT = /^(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)[fF]?$|^(?:0|[1-9][0-9]*)[fF]$/;

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?',
};

export function tokenizePbtxt(source: string, file: string): PbtxtToken[] {
  const tokens: PbtxtToken[] = [];
  let pos = 0;
  let line = 1;
  let lineStart = 0;
  const fail = (at: number, what: string): never => {
    throw createError('SF_ERR_CONFIG_PARSE', file, line, at - lineStart + 1, what);
  };

  while (pos < source.length) {
    const ch = source[pos]!;
    if (ch === '\n') {
      pos++;
      line++;
      lineStart = pos;
    } else if (ch === ' ' || ch === '\t' || ch === '\r' || ch === '\f' || ch === '\v') {
      pos++;
    } else if (ch === '#') {
      while (pos < source.length && source[pos] !== '\n') pos++;
    } else if (ch === '"' || ch === "'") {
      const end = scanString(source, pos, fail);
      tokens.push({ kind: 'string', text: end.value, line, column: pos - lineStart + 1 });
      pos = end.next;
    } else if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(source[pos + 1] ?? ''))) {
      const start = pos;
      pos = scanWord(source, pos, true);
      const text = source.slice(start, pos);
      const kind = classifyNumber(text) ?? fail(start, `invalid number '${text}'`);
      tokens.push({ kind, text, line, column: start - lineStart + 1 });
    } else if (IDENTIFIER_START.test(ch)) {
      const start = pos;
      pos = scanWord(source, pos, false);
      const text = source.slice(start, pos);
      if (text.includes('.')) fail(start, `invalid name '${text}'`);
      tokens.push({ kind: 'identifier', text, line, column: start - lineStart + 1 });
    } else if (PUNCTUATION.has(ch)) {
      tokens.push({ kind: 'punct', text: ch, line, column: pos - lineStart + 1 });
      pos++;
    } else {
      fail(pos, `unexpected character '${ch}'`);
    }
  }
  tokens.push({ kind: 'eof', text: '', line, column: pos - lineStart + 1 });
  return tokens;
}

/**
 * Takes the longest run of word characters, so `8x` or `1.2.3` is read whole and rejected as a
 * bad number instead of being split into two tokens. In a decimal number an exponent may carry a sign.
 */
function scanWord(source: string, start: number, numeric: boolean): number {
  let pos = start;
  const hex = numeric && /^0[xX]/.test(source.slice(start, start + 2));
  while (pos < source.length) {
    const ch = source[pos]!;
    if (WORD_CHAR.test(ch)) {
      pos++;
    } else if (numeric && !hex && (ch === '+' || ch === '-') && /[eE]/.test(source[pos - 1]!)) {
      pos++;
    } else {
      break;
    }
  }
  return pos;
}

function classifyNumber(text: string): 'integer' | 'float' | undefined {
  if (DECIMAL_INTEGER.test(text) || OCTAL_INTEGER.test(text) || HEX_INTEGER.test(text)) return 'integer';
  return FLOAT.test(text) ? 'float' : undefined;
}

/** Reads a quoted string with C-style escapes; octal and hex escapes are bytes, decoded as UTF-8. */
function scanString(
  source: string,
  start: number,
  fail: (at: number, what: string) => never,
): { value: string; next: number } {
  const quote = source[start]!;
  const bytes: number[] = [];
  const pushText = (text: string): void => {
    bytes.push(...Buffer.from(text, 'utf8'));
  };
  let pos = start + 1;
  for (;;) {
    const ch = source[pos];
    if (ch === undefined || ch === '\n') {
      fail(start, `unterminated string: expected a closing ${quote} before the end of the line`);
    }
    if (ch === quote) return { value: Buffer.from(bytes).toString('utf8'), next: pos + 1 };
    if (ch !== '\\') {
      const codePoint = source.codePointAt(pos)!;
      pushText(String.fromCodePoint(codePoint));
      pos += codePoint > 0xffff ? 2 : 1;
      continue;
    }
    const escape = source[pos + 1] ?? '';
    const simple = SIMPLE_ESCAPES[escape];
    if (simple !== undefined) {
      pushText(simple);
      pos += 2;
    } else if (/[0-7]/.test(escape)) {
      const digits = /^[0-7]{1,3}/.exec(source.slice(pos + 1))![0];
      bytes.push(parseInt(digits, 8) & 0xff);
      pos += 1 + digits.length;
    } else if (escape === 'x' || escape === 'X') {
      const digits = /^[0-9A-Fa-f]{1,2}/.exec(source.slice(pos + 2))?.[0] ?? fail(pos, 'invalid escape: \\x needs hex digits');
      bytes.push(parseInt(digits, 16));
      pos += 2 + digits.length;
    } else if (escape === 'u' || escape === 'U') {
      const width = escape === 'u' ? 4 : 8;
      const digits = source.slice(pos + 2, pos + 2 + width);
      const codePoint = /^[0-9A-Fa-f]+$/.test(digits) && digits.length === width ? parseInt(digits, 16) : NaN;
      if (!(codePoint <= 0x10ffff)) fail(pos, `invalid escape: \\${escape} needs ${width} hex digits of a Unicode code point`);
      pushText(String.fromCodePoint(codePoint));
      pos += 2 + width;
    } else {
      fail(pos, `invalid escape '\\${escape}' in string`);
    }
  }
}
