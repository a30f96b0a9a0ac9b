import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createError } from '../../src/errors/index.js';
import { logFailure, toHttpError } from '../../src/server/error-handler.js';

const production = { bodyLimit: 1024, exposeErrors: false, requestId: 'r-1' };

function logged(err: unknown): [string, unknown, string][] {
  const lines: [string, unknown, string][] = [];
  const log = Object.fromEntries(['error', 'warn', 'info'].map((level) => [level, (obj: unknown, msg: string) => lines.push([level, obj, msg])]));
  logFailure({ log } as unknown as FastifyRequest, err, toHttpError(err, production));
  return lines;
}

describe('toHttpError', () => {
  it('hides a server fault message in production, keeping the code and adding the request id', () => {
    expect(toHttpError(new Error('db password is hunter2'), production)).toEqual({
      status: 500,
      fault: true,
      body: { error: 'Internal Server Error', code: 'SF_ERR_EXECUTION_FAILED', request_id: 'r-1' },
    });
    expect(toHttpError(new Error('db password is hunter2'), { ...production, exposeErrors: true }).body).toEqual({
      error: 'db password is hunter2',
      code: 'SF_ERR_EXECUTION_FAILED',
    });
  });

  it('keeps the catalogue message of a refusal, which is no fault', () => {
    expect(toHttpError(createError('SF_ERR_QUEUE_FULL'), production)).toEqual({
      status: 503,
      fault: false,
      body: { error: 'Exceeds maximum queue size', code: 'SF_ERR_QUEUE_FULL' },
    });
  });
});

describe('logFailure', () => {
  it('logs a server fault at error level with the error itself', () => {
    const err = new Error('boom');
    expect(logged(err)).toEqual([['error', { err }, 'request failed']]);
  });

  it.each([
    ['SF_ERR_SOCKET_LIMIT', 'warn'],
    ['SF_ERR_QUEUE_FULL', 'warn'],
  ] as const)('logs %s at %s level, without the error and so without a stack', (code, level) => {
    const err = code === 'SF_ERR_SOCKET_LIMIT' ? createError(code, '/ws', 2) : createError(code);
    expect(logged(err)).toEqual([[level, { code, statusCode: 503 }, err.message]]);
  });

  it('leaves a draining or not-ready 503 to the access line: it is expected while the server stops', () => {
    expect(logged(createError('SF_ERR_DRAINING'))).toEqual([]);
    expect(logged(createError('SF_ERR_NOT_READY', 'draining'))).toEqual([]);
  });

  it('leaves 4xx answers to the request log', () => {
    expect(logged(createError('SF_ERR_BAD_REQUEST', 'nope'))).toEqual([]);
  });
});
