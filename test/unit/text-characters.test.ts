import { describe, expect, it } from 'vitest';
import { loneSurrogateAt } from '../../src/validation/lone-surrogate.js';
import { admittedPair, admittedText, codePoints, MAX_CHARACTERS_PER_TOKEN } from '../../src/text/text-characters.js';

/** One token's worth of characters: the bound is 250. */
const limit = (cut: boolean, direction: 'left' | 'right' = 'right') => ({ maxInputLength: 1, cut, direction });

describe('admittedText', () => {
  it('counts code points, so a surrogate pair is one character, and never splits one when cutting', () => {
    const text = '😀'.repeat(MAX_CHARACTERS_PER_TOKEN + 2);
    expect(codePoints(text)).toBe(MAX_CHARACTERS_PER_TOKEN + 2);
    expect(admittedText('😀'.repeat(MAX_CHARACTERS_PER_TOKEN), limit(false))).toHaveLength(2 * MAX_CHARACTERS_PER_TOKEN);
    const right = admittedText(`a${text}`, limit(true));
    expect([codePoints(right), right.startsWith('a😀'), loneSurrogateAt(right)]).toEqual([MAX_CHARACTERS_PER_TOKEN, true, -1]);
    const left = admittedText(`${text}z`, limit(true, 'left'));
    expect([codePoints(left), left.endsWith('😀z'), loneSurrogateAt(left)]).toEqual([MAX_CHARACTERS_PER_TOKEN, true, -1]);
  });

  it("refuses a text over the bound with TEI's message when not cutting, and a lone surrogate always", () => {
    expect(() => admittedText('x'.repeat(251), limit(false))).toThrow('`inputs` must have less than 250 characters. Given: 251');
    expect(() => admittedText('ok \udc00', limit(true))).toThrow(/lone surrogate \(\\udc00 at UTF-16 index 3\)/);
  });
});

describe('admittedPair', () => {
  it('bounds both texts together and cuts each to half the bound, as TEI', () => {
    expect(admittedPair('x'.repeat(200), 'y'.repeat(50), limit(false))).toEqual(['x'.repeat(200), 'y'.repeat(50)]);
    expect(() => admittedPair('x'.repeat(200), 'y'.repeat(51), limit(false))).toThrow('Given: 251');
    expect(admittedPair('x'.repeat(300), 'y'.repeat(10), limit(true))).toEqual(['x'.repeat(125), 'y'.repeat(10)]);
  });
});
