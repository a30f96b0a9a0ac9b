import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  createError,
  deserializeError,
  ERROR_CATALOGUE,
  serializeError,
  ServeFnError,
  statusOf,
  type SfErrorCode,
} from '../../src/errors/index.js';

const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const documented = new Map(
  [...docs.matchAll(/^\| `(SF_ERR_[A-Z0-9_]+)` \| (\d{3}) \| (.*) \|$/gm)].map((m) => [m[1], { status: Number(m[2]), message: m[3].replace(/\\\|/g, '|') }]),
);

describe('error catalogue', () => {
  it('documents every code with its status and message, and nothing else', () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(ERROR_CATALOGUE).sort());
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      expect(documented.get(code), code).toEqual({ status: spec.status, message: spec.message });
    }
  });

  it('gives every code an HTTP status and the SF_ERR_ prefix', () => {
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      expect(code).toMatch(/^SF_ERR_[A-Z0-9_]+$/);
      expect(spec.status).toBeGreaterThanOrEqual(400);
      expect(spec.status).toBeLessThan(600);
    }
  });

  it('types the code as exactly the catalogue keys', () => {
    expectTypeOf<ServeFnError['code']>().toEqualTypeOf<keyof typeof ERROR_CATALOGUE>();
    expectTypeOf<SfErrorCode>().toEqualTypeOf<keyof typeof ERROR_CATALOGUE>();
  });

  it('fills message placeholders in order', () => {
    const err = createError('SF_ERR_BATCH_RESULT_LENGTH', 'M.run', 3, 4);
    expect(err.message).toBe(
      'M.run returned 3 results for a batch of 4 requests: a batched method (@Batch, or execute(requests)) must return one result (or Error) per request, in order.',
    );
    expect(err.code).toBe('SF_ERR_BATCH_RESULT_LENGTH');
    expect(err.statusCode).toBe(500);
  });

  it('keeps code and status across a structured clone', () => {
    const original = createError('SF_ERR_QUEUE_FULL');
    const back = deserializeError(structuredClone(serializeError(original)));
    expect(back).toBeInstanceOf(ServeFnError);
    expect((back as ServeFnError).code).toBe('SF_ERR_QUEUE_FULL');
    expect(statusOf(back)).toBe(503);
    expect(back.message).toBe('Exceeds maximum queue size');
  });

  it('keeps a plain error as a plain error with its message and a 4xx status it carried', () => {
    const plain = Object.assign(new TypeError('bad voice'), { statusCode: 404 });
    const back = deserializeError(structuredClone(serializeError(plain)));
    expect(back).not.toBeInstanceOf(ServeFnError);
    expect(back.name).toBe('TypeError');
    expect(back.message).toBe('bad voice');
    expect(statusOf(back)).toBe(404);
    expect(statusOf(deserializeError(serializeError('thrown string')))).toBe(500);
  });
});
