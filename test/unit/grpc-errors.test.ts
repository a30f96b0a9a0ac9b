import { readFileSync } from 'node:fs';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { createError, ERROR_CATALOGUE } from '../../src/errors/index.js';
import { GRPC_CODE_BY_HTTP_STATUS, toGrpcError } from '../../src/protocol/grpc/grpc-errors.js';

const production = { exposeErrors: false };

describe('GRPC_CODE_BY_HTTP_STATUS', () => {
  it('has a code for every status the catalogue answers with', () => {
    const statuses = new Set(Object.values(ERROR_CATALOGUE).map((spec) => spec.status));
    for (const code of statuses) expect(GRPC_CODE_BY_HTTP_STATUS[code], String(code)).toBeDefined();
  });

  it('is the table docs/errors.md shows', () => {
    const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const documented = Object.fromEntries([...docs.matchAll(/^\| (\d{3}) \| ([A-Z_]+) \|$/gm)].map((m) => [m[1], m[2]]));
    expect(documented).toEqual(Object.fromEntries(Object.entries(GRPC_CODE_BY_HTTP_STATUS).map(([http, code]) => [http, status[code]])));
  });

  it("answers an overloaded model UNAVAILABLE, Triton's queue-full code that retry policies retry, never INVALID_ARGUMENT", () => {
    expect(toGrpcError(createError('SF_ERR_TEXT_OVERLOADED'), production)).toEqual({ code: status.UNAVAILABLE, details: 'Model is overloaded', fault: false });
    expect(toGrpcError(createError('SF_ERR_QUEUE_FULL'), production).code).toBe(status.UNAVAILABLE);
    expect(toGrpcError(createError('SF_ERR_RATE_LIMITED', 1, 1000, 1), production).code).toBe(status.UNAVAILABLE);
  });

  it("maps Triton's kinds as Triton does, and the others as grpc's status codes mean them", () => {
    const cases: [Parameters<typeof createError>, status][] = [
      [['SF_ERR_BAD_REQUEST', 'x'], status.INVALID_ARGUMENT],
      [['SF_ERR_UNAUTHORIZED'], status.UNAUTHENTICATED],
      [['SF_ERR_API_RESTRICTED', 'protocol', 'triton-grpc-protocol-k'], status.UNAVAILABLE],
      [['SF_ERR_NOT_FOUND'], status.NOT_FOUND],
      [['SF_ERR_BODY_TOO_LARGE', 1], status.RESOURCE_EXHAUSTED],
      [['SF_ERR_TEXT_VALIDATION', 'x'], status.INVALID_ARGUMENT],
      [['SF_ERR_TEXT_BACKEND', 'm'], status.INTERNAL],
      [['SF_ERR_CANCELLED'], status.CANCELLED],
      [['SF_ERR_UNSUPPORTED', 'x'], status.UNIMPLEMENTED],
      [['SF_ERR_NOT_READY', 'starting'], status.UNAVAILABLE],
    ];
    for (const [args, code] of cases) expect(toGrpcError(createError(...args), production).code, args[0]).toBe(code);
  });
});

describe('toGrpcError', () => {
  const fault = Object.assign(new Error("ENOENT: no such file or directory, open '/models/secret/model.onnx'"), { statusCode: 500 });

  it("answers a server fault's details generically under serve-fn start, and marks it to be logged", () => {
    expect(toGrpcError(fault, production)).toEqual({ code: status.INTERNAL, details: 'Internal Server Error', fault: true });
    expect(toGrpcError(new Error('/models/secret/model.onnx'), production).details).toBe('Internal Server Error');
    expect(toGrpcError(Object.assign(new Error('/models/x'), { statusCode: 503 }), production)).toEqual({ code: status.UNAVAILABLE, details: 'Internal Server Error', fault: true });
  });

  it("keeps a refusal's message: a client error, or one of the catalogue's 5xx written for clients", () => {
    expect(toGrpcError(createError('SF_ERR_MODEL_NOT_READY', 'm', '1'), production)).toEqual({ code: status.UNAVAILABLE, details: "Model 'm' version 1 is not ready", fault: false });
    expect(toGrpcError(Object.assign(new Error('unknown speaker'), { statusCode: 404 }), production)).toEqual({ code: status.NOT_FOUND, details: 'unknown speaker', fault: false });
  });

  it('shows the message under serve-fn dev', () => {
    expect(toGrpcError(fault, { exposeErrors: true })).toEqual({ code: status.INTERNAL, details: fault.message, fault: true });
  });
});
