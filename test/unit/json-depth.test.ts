import { describe, expect, it } from 'vitest';
import { checkJsonDepth, jsonDepthExceeds } from '../../src/validation/json-depth.js';

const nested = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));

describe('jsonDepthExceeds', () => {
  it('counts each array or object as one level, scalars as none', () => {
    expect(jsonDepthExceeds(5, 0)).toBe(false);
    expect(jsonDepthExceeds([], 0)).toBe(true);
    expect(jsonDepthExceeds({ a: [1, { b: 2 }] }, 3)).toBe(false);
    expect(jsonDepthExceeds({ a: [1, { b: [] }] }, 3)).toBe(true);
  });

  it('walks 100,000 levels without overflowing the stack', () => {
    expect(jsonDepthExceeds(nested(100_000))).toBe(true);
  });
});

describe('checkJsonDepth', () => {
  it('throws SF_ERR_BODY_TOO_DEEP (400) past 128 levels', () => {
    expect(() => checkJsonDepth(nested(128))).not.toThrow();
    expect(() => checkJsonDepth(nested(129))).toThrow(expect.objectContaining({ code: 'SF_ERR_BODY_TOO_DEEP', statusCode: 400 }));
  });
});
