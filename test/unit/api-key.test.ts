import { describe, expect, it } from 'vitest';
import { apiKeyVerifier } from '../../src/server/api-key.js';

const KEY = 'sk-0123456789abcdef';
const verify = apiKeyVerifier(KEY);

describe('apiKeyVerifier', () => {
  it('accepts the key as a bearer token, whatever the case of the scheme and the spaces around the token', () => {
    expect(verify({ authorization: [`Bearer ${KEY}`], apiKey: [] })).toBe(true);
    expect(verify({ authorization: [`bearer   ${KEY}  `], apiKey: [] })).toBe(true);
    expect(verify({ authorization: [`BEARER ${KEY}`], apiKey: [] })).toBe(true);
  });

  it('accepts the key as x-api-key', () => {
    expect(verify({ authorization: [], apiKey: [KEY] })).toBe(true);
  });

  it('accepts when any one of several presented values holds the key', () => {
    expect(verify({ authorization: ['Bearer sk-wrong', `Bearer ${KEY}`], apiKey: [] })).toBe(true);
    expect(verify({ authorization: ['Bearer sk-wrong'], apiKey: ['sk-other', KEY] })).toBe(true);
  });

  it('refuses nothing presented, a wrong key, a prefix or extension of the key, and other schemes', () => {
    expect(verify({ authorization: [], apiKey: [] })).toBe(false);
    expect(verify({ authorization: ['Bearer sk-wrong'], apiKey: ['sk-wrong'] })).toBe(false);
    expect(verify({ authorization: [`Bearer ${KEY.slice(0, -1)}`], apiKey: [`${KEY}0`] })).toBe(false);
    expect(verify({ authorization: [KEY, `Basic ${KEY}`, `Bearer ${KEY} extra`], apiKey: [''] })).toBe(false);
  });
});
