import { describe, expect, it } from 'vitest';
import { createError, ERROR_CATALOGUE } from '../../src/errors/index.js';
import { teiError } from '../../src/protocol/tei/tei-errors.js';
import { RequestValidationError } from '../../src/validation/dto-validator.js';

const options = { bodyLimit: 1024, exposeErrors: false };

describe('teiError', () => {
  it('gives each engine error TEI’s error_type and the catalogue’s status', () => {
    const cases = [
      [createError('SF_ERR_TEXT_EMPTY', '`inputs`'), 'Empty'],
      [createError('SF_ERR_TEXT_VALIDATION', 'bad'), 'Validation'],
      [createError('SF_ERR_TEXT_BATCH_TOO_LARGE', 33, 32), 'Validation'],
      [createError('SF_ERR_TEXT_TOO_LONG', 512, 600), 'Validation'],
      [createError('SF_ERR_TEXT_OVERLOADED'), 'Overloaded'],
      [createError('SF_ERR_TEXT_WRONG_TASK', 'm', 're-ranker'), 'Backend'],
      [createError('SF_ERR_TEXT_BACKEND', 'm', 'boom'), 'Backend'],
      [createError('SF_ERR_TOKENIZATION_FAILED', 'bad text'), 'Tokenizer'],
    ] as const;
    for (const [err, kind] of cases) {
      const answer = teiError(err, options);
      expect(answer.status, err.code).toBe(ERROR_CATALOGUE[err.code].status);
      expect(answer.body).toEqual({ error: err.message, error_type: kind });
      expect(answer.fault).toBe(false);
    }
    // TEI's statuses, as its `From<&ErrorType> for StatusCode` maps them (413 for the batch size, as TEI documents it).
    expect([400, 422, 413, 422, 429, 424, 424, 422]).toEqual(cases.map(([err]) => teiError(err, options).status));
  });

  it('a tokenizer failing on one request’s text is 422 Tokenizer, not the start-up 500', () => {
    const err = createError('SF_ERR_TOKENIZER_INVALID', 'tokenizer.json', 'cannot encode');
    expect(teiError(err, options)).toMatchObject({ status: 422, body: { error_type: 'Tokenizer' } });
  });

  it('unreadable JSON is 422 Validation', () => {
    const err = new RequestValidationError([{ loc: ['body', 12], msg: 'JSON decode error', type: 'json_invalid' }]);
    expect(teiError(err, options)).toMatchObject({ status: 422, body: { error_type: 'Validation', error: expect.stringContaining('JSON decode error') } });
  });

  it('a fastify refusal keeps its status; an unknown fault is a 500 that does not tell its message', () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
    expect(teiError(tooLarge, options)).toMatchObject({ status: 413, body: { error_type: 'Validation', error: expect.stringContaining('1024') } });
    const fault = teiError(new Error('db password is hunter2'), options);
    expect(fault.status).toBe(500);
    expect(fault.fault).toBe(true);
    expect(fault.body.error).not.toContain('hunter2');
    expect(fault.body.error_type).toBe('Backend');
    expect(teiError(new Error('db password is hunter2'), { ...options, exposeErrors: true }).body.error).toBe('db password is hunter2');
  });

  it('a server that cannot serve (draining) is 503 Unhealthy', () => {
    expect(teiError(createError('SF_ERR_DRAINING'), options)).toMatchObject({ status: 503, body: { error_type: 'Unhealthy' } });
  });
});
