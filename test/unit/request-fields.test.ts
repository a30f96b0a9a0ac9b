import { describe, expect, it } from 'vitest';
import { expectedPhrase, fieldReaders, type FieldProblem } from '../../src/text/request-fields.js';

/** A factory that keeps the problem, so each test sees what the reader reported. */
class Reported extends Error {
  constructor(readonly problem: FieldProblem) {
    super(JSON.stringify(problem));
  }
}

const fields = fieldReaders((problem) => new Reported(problem));

function reported(read: () => unknown): FieldProblem {
  try {
    read();
  } catch (err) {
    if (err instanceof Reported) return err.problem;
    throw err;
  }
  throw new Error('the reader accepted the value');
}

describe('fieldReaders', () => {
  it('reads a body only when it is a JSON object', () => {
    const body = { a: 1 };
    expect(fields.body(body)).toBe(body);
    for (const value of [null, [], 'text', 3]) expect(reported(() => fields.body(value))).toEqual({ field: 'body', expected: { kind: 'body' }, value });
  });

  it('takes null as "not set" in optional fields, and reports other types with the value', () => {
    const body = { s: 'x', b: false, n: null, i: 7, o: { k: 1 } };
    expect([fields.optionalString(body, 's'), fields.optionalString(body, 'n'), fields.optionalString(body, 'absent')]).toEqual(['x', undefined, undefined]);
    expect([fields.optionalBoolean(body, 'b'), fields.optionalBoolean(body, 'n')]).toEqual([false, undefined]);
    expect([fields.optionalObject(body, 'o'), fields.optionalObject(body, 'n')]).toEqual([{ k: 1 }, undefined]);
    expect(reported(() => fields.optionalString(body, 'i'))).toEqual({ field: 'i', expected: { kind: 'string' }, value: 7 });
    expect(reported(() => fields.optionalBoolean(body, 's'))).toEqual({ field: 's', expected: { kind: 'boolean' }, value: 'x' });
    expect(reported(() => fields.optionalObject(body, 's'))).toEqual({ field: 's', expected: { kind: 'object' }, value: 'x' });
  });

  it('reports an absent required field as missing, and a null one as a wrong type', () => {
    expect(reported(() => fields.requiredString({}, 'query'))).toEqual({ field: 'query', missing: true });
    expect(reported(() => fields.required({}, 'inputs'))).toEqual({ field: 'inputs', missing: true });
    expect(reported(() => fields.requiredString({ query: null }, 'query'))).toEqual({ field: 'query', expected: { kind: 'string' }, value: null });
    expect(fields.required({ inputs: null }, 'inputs')).toBeNull();
  });

  it('gives booleanOr its default only when the field is absent (serde refuses null there)', () => {
    expect([fields.booleanOr({}, 'f', true), fields.booleanOr({ f: false }, 'f', true)]).toEqual([true, false]);
    expect(reported(() => fields.booleanOr({ f: null }, 'f', true))).toEqual({ field: 'f', expected: { kind: 'boolean' }, value: null });
  });

  it('reads safe integers of at least the bound, any integer without one', () => {
    expect([fields.optionalInteger({ n: 0 }, 'n', 0), fields.optionalInteger({ n: -3 }, 'n'), fields.optionalInteger({ n: null }, 'n', 1)]).toEqual([0, -3, undefined]);
    for (const value of [0, 1.5, '2', 2 ** 53]) expect(reported(() => fields.optionalInteger({ n: value }, 'n', 1))).toEqual({ field: 'n', expected: { kind: 'integer', min: 1 }, value });
  });

  it("reads truncation_direction in serde's spellings, or in any case when asked", () => {
    const serde = { anyCase: false };
    const anyCase = { anyCase: true };
    expect(['Left', 'left', 'Right', 'right'].map((d) => fields.truncationDirection({ truncation_direction: d }, serde))).toEqual(['left', 'left', 'right', 'right']);
    expect(['LEFT', 'rIgHt'].map((d) => fields.truncationDirection({ truncation_direction: d }, anyCase))).toEqual(['left', 'right']);
    expect(fields.truncationDirection({}, serde)).toBeUndefined();
    for (const value of ['LEFT', 'constructor', null, 1]) {
      expect(reported(() => fields.truncationDirection({ truncation_direction: value }, serde))).toEqual({ field: 'truncation_direction', expected: { kind: 'direction' }, value });
    }
    expect(reported(() => fields.truncationDirection({ truncation_direction: 'up' }, anyCase))).toMatchObject({ value: 'up' });
  });
});

describe('expectedPhrase', () => {
  it('names integer bounds', () => {
    expect([undefined, 0, 2].map((min) => expectedPhrase({ kind: 'integer', min }))).toEqual(['an integer', 'a non-negative integer', 'an integer of at least 2']);
  });
});
