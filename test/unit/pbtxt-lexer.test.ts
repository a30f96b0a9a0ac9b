import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import { tokenizePbtxt } from '../../src/model-repository/pbtxt-lexer.js';

function tokens(source: string): [string, string][] {
  return tokenizePbtxt(source, 'lex.pbtxt').map((token) => [token.kind, token.text]);
}

function lexError(source: string): ServeFnError {
  try {
    tokenizePbtxt(source, 'lex.pbtxt');
  } catch (err) {
    return err as ServeFnError;
  }
  throw new Error('expected a lexing error');
}

describe('tokenizePbtxt', () => {
  it('splits fields, punctuation and values, skipping whitespace and # comments', () => {
    expect(tokens('name: "simple" # the model\ndims: [ -1, 16 ];\n')).toEqual([
      ['identifier', 'name'],
      ['punct', ':'],
      ['string', 'simple'],
      ['identifier', 'dims'],
      ['punct', ':'],
      ['punct', '['],
      ['punct', '-'],
      ['integer', '1'],
      ['punct', ','],
      ['integer', '16'],
      ['punct', ']'],
      ['punct', ';'],
      ['eof', ''],
    ]);
  });

  it('records 1-based lines and columns, counting a tab as one column', () => {
    const lexed = tokenizePbtxt('a {\n\tb: 1\n}', 'lex.pbtxt');
    expect(lexed.map((t) => [t.text, t.line, t.column])).toEqual([
      ['a', 1, 1],
      ['{', 1, 3],
      ['b', 2, 2],
      [':', 2, 3],
      ['1', 2, 5],
      ['}', 3, 1],
      ['', 3, 2],
    ]);
  });

  it('treats CRLF line ends like LF', () => {
    const lexed = tokenizePbtxt('a: 1\r\nb: 2\r\n', 'lex.pbtxt');
    expect(lexed.map((t) => [t.text, t.line, t.column])).toEqual([
      ['a', 1, 1],
      [':', 1, 2],
      ['1', 1, 4],
      ['b', 2, 1],
      [':', 2, 2],
      ['2', 2, 4],
      ['', 3, 1],
    ]);
  });

  it('reads decimal, hex and octal integers and every float form', () => {
    expect(tokens('0 42 0x1F 017 1.5 .5 2. 1e-5 3E+2 1.5f 7F 2.5e3f').slice(0, -1)).toEqual([
      ['integer', '0'],
      ['integer', '42'],
      ['integer', '0x1F'],
      ['integer', '017'],
      ['float', '1.5'],
      ['float', '.5'],
      ['float', '2.'],
      ['float', '1e-5'],
      ['float', '3E+2'],
      ['float', '1.5f'],
      ['float', '7F'],
      ['float', '2.5e3f'],
    ]);
  });

  it('reads identifiers such as enum names, booleans and inf', () => {
    expect(tokens('KIND_CPU True false inf _x9').slice(0, -1)).toEqual([
      ['identifier', 'KIND_CPU'],
      ['identifier', 'True'],
      ['identifier', 'false'],
      ['identifier', 'inf'],
      ['identifier', '_x9'],
    ]);
  });

  it('decodes both quote kinds and C escapes, octal and hex escapes as UTF-8 bytes', () => {
    const source = String.raw`"a\"b" 'it\'s "x"' "\n\t\\\a\?" "\101\x42" "\303\251" "\u00e9\U0001F600" "日本"`;
    expect(tokens(source).slice(0, -1)).toEqual([
      ['string', 'a"b'],
      ['string', `it's "x"`],
      ['string', '\n\t\\\x07?'],
      ['string', 'AB'],
      ['string', 'é'],
      ['string', 'é😀'],
      ['string', '日本'],
    ]);
  });

  it('rejects a string that is not closed on its line, pointing at the opening quote', () => {
    const err = lexError('name: "ok"\nlabel: "open\n"');
    expect(err).toBeInstanceOf(ServeFnError);
    expect(err.code).toBe('SF_ERR_CONFIG_PARSE');
    expect(err.statusCode).toBe(400);
    expect(err.message).toBe('lex.pbtxt:2:8: unterminated string: expected a closing " before the end of the line');
    expect(lexError("x: 'abc").message).toBe("lex.pbtxt:1:4: unterminated string: expected a closing ' before the end of the line");
  });

  it('rejects unknown escapes and malformed \\x and \\u escapes', () => {
    expect(lexError(String.raw`s: "a\qb"`).message).toBe(String.raw`lex.pbtxt:1:6: invalid escape '\q' in string`);
    expect(lexError(String.raw`s: "\xZZ"`).message).toBe(String.raw`lex.pbtxt:1:5: invalid escape: \x needs hex digits`);
    expect(lexError(String.raw`s: "\u12"`).message).toBe(
      String.raw`lex.pbtxt:1:5: invalid escape: \u needs 4 hex digits of a Unicode code point`,
    );
  });

  it('rejects numbers with trailing letters, two dots or a leading zero that is not octal', () => {
    expect(lexError('max_batch_size: 8x').message).toBe("lex.pbtxt:1:17: invalid number '8x'");
    expect(lexError('v: 1.2.3').message).toBe("lex.pbtxt:1:4: invalid number '1.2.3'");
    expect(lexError('v: 08').message).toBe("lex.pbtxt:1:4: invalid number '08'");
    expect(lexError('v: 0xG1').message).toBe("lex.pbtxt:1:4: invalid number '0xG1'");
  });

  it('rejects characters that text format does not use', () => {
    expect(lexError('name: "a"\n  @x: 1').message).toBe("lex.pbtxt:2:3: unexpected character '@'");
    expect(lexError('a.b: 1').message).toBe("lex.pbtxt:1:1: invalid name 'a.b'");
  });
});
