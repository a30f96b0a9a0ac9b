import { createError } from '../errors/index.js';
import { tokenizePbtxt, type PbtxtToken } from './pbtxt-lexer.js';

/**
 * Protobuf text format into a generic, schema-free message tree that keeps where each field and
 * value was written (see pbtxt-lexer.ts for why this is hand-written). Knowing no schema, the
 * tree keeps numbers as their source text; model-config.ts gives them types.
 */

export interface PbtxtPosition {
  readonly line: number;
  readonly column: number;
}

/** A string (quoted, escapes decoded, adjacent strings joined), number or bare identifier. */
export interface PbtxtScalar extends PbtxtPosition {
  readonly kind: 'string' | 'integer' | 'float' | 'identifier';
  /** Strings: the value. Numbers and identifiers: the source text with any leading '-'. */
  readonly text: string;
}

export interface PbtxtMessage extends PbtxtPosition {
  readonly kind: 'message';
  readonly fields: readonly PbtxtField[];
}

/** `field [ a, b ]`: all scalars or all messages. */
export interface PbtxtList extends PbtxtPosition {
  readonly kind: 'list';
  readonly items: readonly (PbtxtScalar | PbtxtMessage)[];
}

export type PbtxtValue = PbtxtScalar | PbtxtMessage | PbtxtList;

/** One `name: value` as written; a repeated field appears once per repetition. */
export interface PbtxtField extends PbtxtPosition {
  readonly name: string;
  readonly value: PbtxtValue;
}

const CLOSERS: Readonly<Record<string, string>> = { '{': '}', '<': '>' };
/** protobuf's own parser stops at this depth; it also keeps hostile input from exhausting the stack. */
const MAX_DEPTH = 100;

export function parsePbtxt(source: string, file: string): PbtxtMessage {
  return new PbtxtParser(tokenizePbtxt(source, file), file).parseDocument();
}

class PbtxtParser {
  private index = 0;
  private depth = 0;

  constructor(
    private readonly tokens: readonly PbtxtToken[],
    private readonly file: string,
  ) {}

  parseDocument(): PbtxtMessage {
    const fields: PbtxtField[] = [];
    while (this.peek().kind !== 'eof') {
      const token = this.peek();
      if (token.kind === 'punct' && (token.text === '}' || token.text === '>')) {
        this.fail(token, `unexpected '${token.text}': no message is open here`);
      }
      fields.push(this.parseField());
    }
    return { kind: 'message', fields, line: 1, column: 1 };
  }

  private parseField(): PbtxtField {
    const nameToken = this.next();
    if (nameToken.kind !== 'identifier') this.fail(nameToken, `expected a field name, found ${describe(nameToken)}`);
    const hasColon = this.accept(':');
    const value = this.parseValue(nameToken.text, hasColon);
    if (!this.accept(',')) this.accept(';');
    return { name: nameToken.text, line: nameToken.line, column: nameToken.column, value };
  }

  /** Text format lets a message value (or a list of them) omit the ':' after the field name. */
  private parseValue(fieldName: string, hasColon: boolean): PbtxtValue {
    const start = this.peek();
    if (this.isPunct(start, '{') || this.isPunct(start, '<')) return this.parseMessage(fieldName);
    if (this.isPunct(start, '[')) {
      const list = this.parseList(fieldName);
      const first = list.items[0];
      if (!hasColon && first !== undefined && first.kind !== 'message') {
        this.fail(start, `expected ':' after field name '${fieldName}' (only message values may omit it)`);
      }
      return list;
    }
    if (!hasColon) this.fail(start, `expected ':' or '{' after field name '${fieldName}', found ${describe(start)}`);
    return this.parseScalar(fieldName);
  }

  private parseMessage(fieldName: string): PbtxtMessage {
    const open = this.next();
    const close = CLOSERS[open.text]!;
    if (++this.depth > MAX_DEPTH) this.fail(open, `messages are nested more than ${MAX_DEPTH} deep`);
    const fields: PbtxtField[] = [];
    for (;;) {
      const token = this.peek();
      if (this.isPunct(token, close)) {
        this.index++;
        this.depth--;
        return { kind: 'message', fields, line: open.line, column: open.column };
      }
      if (token.kind === 'eof' || token.kind === 'punct') {
        this.fail(
          token,
          `expected '${close}' to close '${fieldName}' opened at line ${open.line}, column ${open.column}, found ${describe(token)}`,
        );
      }
      fields.push(this.parseField());
    }
  }

  private parseList(fieldName: string): PbtxtList {
    const open = this.next();
    const items: (PbtxtScalar | PbtxtMessage)[] = [];
    if (this.accept(']')) return { kind: 'list', items, line: open.line, column: open.column };
    for (;;) {
      const token = this.peek();
      const item = this.isPunct(token, '{') || this.isPunct(token, '<') ? this.parseMessage(fieldName) : this.parseScalar(fieldName);
      if (items.length > 0 && (item.kind === 'message') !== (items[0]!.kind === 'message')) {
        this.fail(token, `list '${fieldName}' mixes messages and plain values`);
      }
      items.push(item);
      if (this.accept(']')) return { kind: 'list', items, line: open.line, column: open.column };
      const after = this.next();
      if (!this.isPunct(after, ',')) {
        this.fail(
          after,
          `expected ',' or ']' in list '${fieldName}' opened at line ${open.line}, column ${open.column}, found ${describe(after)}`,
        );
      }
    }
  }

  private parseScalar(fieldName: string): PbtxtScalar {
    const first = this.next();
    if (first.kind === 'string') {
      let text = first.text;
      while (this.peek().kind === 'string') text += this.next().text;
      return { kind: 'string', text, line: first.line, column: first.column };
    }
    if (first.kind === 'integer' || first.kind === 'float' || first.kind === 'identifier') {
      return { kind: first.kind, text: first.text, line: first.line, column: first.column };
    }
    if (this.isPunct(first, '-')) {
      const magnitude = this.next();
      if (magnitude.kind !== 'integer' && magnitude.kind !== 'float' && magnitude.kind !== 'identifier') {
        this.fail(magnitude, `expected a number after '-' in field '${fieldName}', found ${describe(magnitude)}`);
      }
      return { kind: magnitude.kind, text: `-${magnitude.text}`, line: first.line, column: first.column };
    }
    return this.fail(first, `expected a value for field '${fieldName}', found ${describe(first)}`);
  }

  private peek(): PbtxtToken {
    return this.tokens[this.index]!;
  }

  private next(): PbtxtToken {
    const token = this.tokens[this.index]!;
    if (token.kind !== 'eof') this.index++;
    return token;
  }

  private accept(punct: string): boolean {
    if (!this.isPunct(this.peek(), punct)) return false;
    this.index++;
    return true;
  }

  private isPunct(token: PbtxtToken, text: string): boolean {
    return token.kind === 'punct' && token.text === text;
  }

  private fail(at: PbtxtPosition, what: string): never {
    throw createError('SF_ERR_CONFIG_PARSE', this.file, at.line, at.column, what);
  }
}

function describe(token: PbtxtToken): string {
  switch (token.kind) {
    case 'eof':
      return 'end of file';
    case 'string':
      return `string ${JSON.stringify(token.text)}`;
    case 'integer':
    case 'float':
      return `number ${token.text}`;
    default:
      return `'${token.text}'`;
  }
}
