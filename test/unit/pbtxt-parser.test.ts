import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import { parsePbtxt, type PbtxtMessage, type PbtxtValue } from '../../src/model-repository/pbtxt-parser.js';

const FIXTURES = new URL('../fixtures/pbtxt/', import.meta.url);
const MALFORMED = new Set(['unterminated_string.pbtxt', 'missing_brace.pbtxt', 'bad_number.pbtxt']);

function parseError(source: string, file = 'p.pbtxt'): ServeFnError {
  try {
    parsePbtxt(source, file);
  } catch (err) {
    return err as ServeFnError;
  }
  throw new Error('expected a parse error');
}

/** The tree without positions, to compare structure compactly. */
function shape(value: PbtxtValue): unknown {
  if (value.kind === 'message') return Object.fromEntries(value.fields.map((f, i) => [`${i}:${f.name}`, shape(f.value)]));
  if (value.kind === 'list') return value.items.map(shape);
  return `${value.kind}(${value.text})`;
}

describe('parsePbtxt', () => {
  it('keeps each field with its line and column, and each value with its own', () => {
    const tree = parsePbtxt('name: "simple"\nmax_batch_size: -8\ninput {\n  dims: [ 16 ]\n}\n', 'p.pbtxt');
    expect(tree).toStrictEqual<PbtxtMessage>({
      kind: 'message',
      line: 1,
      column: 1,
      fields: [
        { name: 'name', line: 1, column: 1, value: { kind: 'string', text: 'simple', line: 1, column: 7 } },
        { name: 'max_batch_size', line: 2, column: 1, value: { kind: 'integer', text: '-8', line: 2, column: 17 } },
        {
          name: 'input',
          line: 3,
          column: 1,
          value: {
            kind: 'message',
            line: 3,
            column: 7,
            fields: [
              {
                name: 'dims',
                line: 4,
                column: 3,
                value: { kind: 'list', line: 4, column: 9, items: [{ kind: 'integer', text: '16', line: 4, column: 11 }] },
              },
            ],
          },
        },
      ],
    });
  });

  it('accepts every message and list form, repetition and optional separators', () => {
    const source = [
      'a { x: 1 }',
      'a: { x: 2 },',
      'a < x: 3 >;',
      'b [ { y: "p" }, { y: "q" } ]',
      'b: [ {} ]',
      'c: [ 1, -2.5, -inf, KIND_CPU ]',
      'c: 7',
      'd: []',
      'e [ ]',
      "f: 'one' \"two\"",
    ].join('\n');
    expect(shape(parsePbtxt(source, 'p.pbtxt'))).toEqual({
      '0:a': { '0:x': 'integer(1)' },
      '1:a': { '0:x': 'integer(2)' },
      '2:a': { '0:x': 'integer(3)' },
      '3:b': [{ '0:y': 'string(p)' }, { '0:y': 'string(q)' }],
      '4:b': [{}],
      '5:c': ['integer(1)', 'float(-2.5)', 'identifier(-inf)', 'identifier(KIND_CPU)'],
      '6:c': 'integer(7)',
      '7:d': [],
      '8:e': [],
      '9:f': 'string(onetwo)',
    });
  });

  it('reads a map written as entries and as a list of entries', () => {
    const source = 'parameters { key: "k1" value: { string_value: "v1" } }\nparameters [ { key: "k2", value { string_value: "v2" } } ]';
    expect(shape(parsePbtxt(source, 'p.pbtxt'))).toEqual({
      '0:parameters': { '0:key': 'string(k1)', '1:value': { '0:string_value': 'string(v1)' } },
      '1:parameters': [{ '0:key': 'string(k2)', '1:value': { '0:string_value': 'string(v2)' } }],
    });
  });

  it('parses every well-formed fixture', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.pbtxt') && !MALFORMED.has(f));
    expect(files.length).toBeGreaterThanOrEqual(16);
    for (const file of files) {
      const tree = parsePbtxt(readFileSync(new URL(file, FIXTURES), 'utf8'), file);
      expect(tree.fields.length, file).toBeGreaterThan(0);
    }
  });

  it('reports an unclosed message at the end of the file, naming where it opened', () => {
    const source = readFileSync(new URL('missing_brace.pbtxt', FIXTURES), 'utf8');
    expect(() => parsePbtxt(source, 'missing_brace.pbtxt')).toThrow(
      new ServeFnError(
        'SF_ERR_CONFIG_PARSE',
        "missing_brace.pbtxt:8:1: expected '}' to close 'dynamic_batching' opened at line 3, column 18, found end of file",
      ),
    );
    expect(parseError('a < x: 1 }').message).toBe("p.pbtxt:1:10: expected '>' to close 'a' opened at line 1, column 3, found '}'");
  });

  it('passes lexing errors through with their position', () => {
    const source = readFileSync(new URL('unterminated_string.pbtxt', FIXTURES), 'utf8');
    const err = parseError(source, 'unterminated_string.pbtxt');
    expect(err.code).toBe('SF_ERR_CONFIG_PARSE');
    expect(err.message).toBe('unterminated_string.pbtxt:5:26: unterminated string: expected a closing " before the end of the line');
    const bad = readFileSync(new URL('bad_number.pbtxt', FIXTURES), 'utf8');
    expect(() => parsePbtxt(bad, 'bad_number.pbtxt')).toThrow("bad_number.pbtxt:2:17: invalid number '8x'");
  });

  it('accepts messages nested 100 deep and rejects deeper ones', () => {
    const nest = (depth: number): string => `${'a { '.repeat(depth)}${'} '.repeat(depth)}`;
    expect(parsePbtxt(nest(100), 'p.pbtxt').fields).toHaveLength(1);
    expect(parseError(nest(101)).message).toBe('p.pbtxt:1:403: messages are nested more than 100 deep');
  });

  it('rejects a stray closing brace', () => {
    expect(parseError('a { }\n}').message).toBe("p.pbtxt:2:1: unexpected '}': no message is open here");
  });

  it('requires a colon before plain values but not before messages', () => {
    expect(parseError('name "x"').message).toBe(`p.pbtxt:1:6: expected ':' or '{' after field name 'name', found string "x"`);
    expect(parseError('dims [ 1, 2 ]').message).toBe("p.pbtxt:1:6: expected ':' after field name 'dims' (only message values may omit it)");
  });

  it('rejects malformed values and lists', () => {
    expect(parseError('a: }').message).toBe("p.pbtxt:1:4: expected a value for field 'a', found '}'");
    expect(parseError('a: -"x"').message).toBe(`p.pbtxt:1:5: expected a number after '-' in field 'a', found string "x"`);
    expect(parseError('a: [ 1 2 ]').message).toBe("p.pbtxt:1:8: expected ',' or ']' in list 'a' opened at line 1, column 4, found number 2");
    expect(parseError('a: [ 1, { } ]').message).toBe("p.pbtxt:1:9: list 'a' mixes messages and plain values");
    expect(parseError('a: [ 1,').message).toBe("p.pbtxt:1:8: expected a value for field 'a', found end of file");
    expect(parseError('"x": 1').message).toBe('p.pbtxt:1:1: expected a field name, found string "x"');
    expect(parseError('a: 1\n: 2').message).toBe("p.pbtxt:2:1: expected a field name, found ':'");
  });
});
