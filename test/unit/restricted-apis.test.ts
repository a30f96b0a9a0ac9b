import { describe, expect, it } from 'vitest';
import {
  addApiRestriction,
  apiAccess,
  GRPC_RESTRICTION,
  HTTP_RESTRICTION,
  isLoopback,
  parseApiRestriction,
  type ApiCaller,
} from '../../src/server/restricted-apis.js';

const SECRET = 's3cret-0123456789';

function caller(remoteAddress: string | undefined, headers: Record<string, string[]> = {}): ApiCaller {
  return { remoteAddress, values: (name) => headers[name] ?? [] };
}

const refusal = (err: { code: string; statusCode: number; message: string } | undefined) => err && { code: err.code, status: err.statusCode, message: err.message };

describe('parseApiRestriction', () => {
  it("reads Triton's <apis>:<key>=<value>, the key in lower case", () => {
    expect(parseApiRestriction(`shared-memory,model-repository:Admin-Key=${SECRET}`)).toEqual({ groups: ['shared-memory', 'model-repository'], header: 'admin-key', value: SECRET });
    expect(parseApiRestriction('statistics:k=a=b')).toEqual({ groups: ['statistics'], header: 'k', value: 'a=b' });
  });

  it('refuses a setting it cannot read, naming why and never echoing the value', () => {
    const why = (text: string): string => {
      try {
        parseApiRestriction(text);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error(`'${text}' was accepted`);
    };
    expect(why('shared-memory')).toMatch(/^expected '<api>,<api>\.\.\.:<header>=<value>'/);
    expect(why('shared-memory:admin-key')).toMatch(/^expected/);
    expect(why(`inference:admin-key=${SECRET}`)).toBe('unknown API \'inference\': use shared-memory, model-repository, model-config, statistics, trace, logging.');
    expect(why(`shared-memory:admin key=${SECRET}`)).toMatch(/is not a header name/);
    expect(why('shared-memory:admin-key=')).toBe("the value of header 'admin-key' must be printable ASCII without spaces (it is sent as a header).");
    expect(why('shared-memory:admin-key=two words')).not.toContain('two words');
  });

  it('puts a group in one setting only, as Triton', () => {
    const first = addApiRestriction([], parseApiRestriction('shared-memory:a=1'));
    expect(() => addApiRestriction(first, parseApiRestriction('model-repository,shared-memory:b=2'))).toThrow("API 'shared-memory' can not be specified in multiple config groups.");
    expect(() => addApiRestriction([], parseApiRestriction('statistics,statistics:b=2'))).toThrow("API 'statistics' can not be specified in multiple config groups.");
    expect(addApiRestriction(first, parseApiRestriction('statistics:b=2'))).toHaveLength(2);
  });
});

describe('isLoopback', () => {
  it('knows 127.0.0.0/8, ::1 and IPv4-mapped loopback, and nothing else', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopback(address), address).toBe(true);
    for (const address of ['192.0.2.2', '10.0.0.1', '::ffff:10.0.0.1', 'fd00::2', '0.0.0.0', '::', 'localhost', '', undefined]) expect(isLoopback(address), String(address)).toBe(false);
  });
});

describe('apiAccess', () => {
  it('answers shared memory and repository control to loopback clients only while no setting names them; the other groups are open', () => {
    const refusalFor = apiAccess([], HTTP_RESTRICTION);
    expect(refusalFor('shared-memory', caller('127.0.0.1'))).toBeUndefined();
    expect(refusalFor('model-repository', caller('::1'))).toBeUndefined();
    expect(refusal(refusalFor('shared-memory', caller('192.0.2.2')))).toEqual({
      code: 'SF_ERR_API_LOCAL_ONLY',
      status: 403,
      message: "This API is restricted to clients on the server's own host; to serve others, set --http-restricted-api=shared-memory:<header>=<value> and send that header.",
    });
    expect(refusal(refusalFor('model-repository', caller(undefined)))?.code).toBe('SF_ERR_API_LOCAL_ONLY');
    for (const group of ['model-config', 'statistics', 'trace', 'logging'] as const) expect(refusalFor(group, caller('192.0.2.2')), group).toBeUndefined();
  });

  it('asks every client for the header of a restricted group, loopback ones too, as Triton', () => {
    const refusalFor = apiAccess([parseApiRestriction(`shared-memory,statistics:admin-key=${SECRET}`)], HTTP_RESTRICTION);
    const refused = { code: 'SF_ERR_API_RESTRICTED', status: 403, message: "This API is restricted, expecting header 'admin-key'" };
    expect(refusalFor('shared-memory', caller('192.0.2.2', { 'admin-key': [SECRET] }))).toBeUndefined();
    expect(refusalFor('statistics', caller('192.0.2.2', { 'admin-key': ['wrong', SECRET] }))).toBeUndefined();
    expect(refusal(refusalFor('shared-memory', caller('127.0.0.1')))).toEqual(refused);
    expect(refusal(refusalFor('statistics', caller('192.0.2.2', { 'admin-key': [`${SECRET}x`] })))).toEqual(refused);
    // A group the setting does not name keeps its default.
    expect(refusal(refusalFor('model-repository', caller('192.0.2.2', { 'admin-key': [SECRET] })))?.code).toBe('SF_ERR_API_LOCAL_ONLY');
  });

  it("reads gRPC's header as Triton does, under triton-grpc-protocol-, and says protocol", () => {
    const refusalFor = apiAccess([parseApiRestriction(`model-repository:admin-key=${SECRET}`)], GRPC_RESTRICTION);
    expect(refusalFor('model-repository', caller('192.0.2.2', { 'triton-grpc-protocol-admin-key': [SECRET] }))).toBeUndefined();
    expect(refusal(refusalFor('model-repository', caller('192.0.2.2', { 'admin-key': [SECRET] }))))
      .toEqual({ code: 'SF_ERR_API_RESTRICTED', status: 403, message: "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'" });
    expect(refusalFor('shared-memory', caller('192.0.2.2'))?.message).toBe(
      "This protocol is restricted to clients on the server's own host; to serve others, set --grpc-restricted-protocol=shared-memory:<header>=<value> and send that header.",
    );
  });
});
