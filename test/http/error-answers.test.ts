import 'reflect-metadata';
import { gzipSync } from 'node:zlib';
import { IsString, MaxLength, MinLength } from 'class-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Endpoint, Instances, IsFile, Model, ServeFnServer, type UploadedFile } from '../../src/index.js';
import { MAX_JSON_DEPTH } from '../../src/validation/json-depth.js';

class TextRequest {
  @IsString() @MinLength(1) @MaxLength(20) text!: string;
}

class Upload {
  @IsFile() file!: UploadedFile;
}

@Model({ name: 'faulty' })
@Instances(1, { inline: true })
class Faulty {
  @Endpoint('/secret', { body: TextRequest })
  async secret(): Promise<never> {
    throw new Error('db password is hunter2', { cause: new Error('connect ECONNREFUSED 10.0.0.5:5432') });
  }

  @Endpoint('/voices/:id', { method: 'GET' })
  async voice(): Promise<never> {
    throw Object.assign(new Error('no voice 7'), { statusCode: 404 });
  }

  @Endpoint('/count')
  async count(): Promise<object> {
    return { tokens: 12n };
  }

  @Endpoint('/echo')
  async echo(body: unknown): Promise<unknown> {
    return body;
  }

  @Endpoint('/upload', { body: Upload, consumes: 'multipart' })
  async upload(form: Upload): Promise<number> {
    return form.file.data.byteLength;
  }
}

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  err?: { stack: string; message: string };
}

const ERROR = 50;
const lines: LogLine[] = [];
let server: ServeFnServer;

beforeAll(async () => {
  // Production, as `serve-fn start` runs it: exposeErrors is off by default.
  server = new ServeFnServer({
    models: [Faulty],
    collectProcessMetrics: false,
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line) as LogLine) } },
  });
  await server.start();
});

afterAll(async () => {
  await server.close();
});

const post = (url: string, payload: string | Buffer, headers: Record<string, string> = {}) =>
  server.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload });

describe('a 500 in production', () => {
  it("answers a generic message with the code and the request id, never the model's message", async () => {
    const res = await post('/secret', '{"text":"hi"}');
    expect(res.statusCode).toBe(500);
    const id = res.headers['x-request-id'];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json()).toEqual({ error: 'Internal Server Error', code: 'SF_ERR_EXECUTION_FAILED', request_id: id });
    expect(res.body).not.toContain('hunter2');
  });

  it("logs the full error under the request id, with the model's error as cause and its stack (file and line)", async () => {
    const res = await post('/secret', '{"text":"hi"}', { 'x-request-id': 'trace-42' });
    expect(res.headers['x-request-id']).toBe('trace-42');
    expect(res.json().request_id).toBe('trace-42');
    const logged = lines.find((l) => l.reqId === 'trace-42' && l.level === ERROR);
    expect(logged?.err?.message).toContain('db password is hunter2');
    expect(logged?.err?.stack).toMatch(/caused by: Error: db password is hunter2\n\s+at Faulty\b.*secret.*error-answers\.test\.ts:\d+/);
  });

  it('keeps a request id only when it is short visible ASCII', async () => {
    const long = await post('/echo', '{}', { 'x-request-id': 'x'.repeat(500) });
    expect(long.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const spaced = await post('/echo', '{}', { 'x-request-id': 'a b' });
    expect(spaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('codes that say what happened', () => {
  it('gives an error thrown with statusCode 404 the not-found code', async () => {
    const res = await server.app.inject({ method: 'GET', url: '/voices/7' });
    expect([res.statusCode, res.json()]).toEqual([404, { error: 'no voice 7', code: 'SF_ERR_NOT_FOUND' }]);
  });

  it('answers a result JSON cannot hold (a BigInt) with SF_ERR_RESPONSE_NOT_SERIALIZABLE', async () => {
    const res = await post('/count', '{}');
    expect([res.statusCode, res.json().code]).toEqual([500, 'SF_ERR_RESPONSE_NOT_SERIALIZABLE']);
  });

  it('answers a wrong method with 405 and the methods the path takes in Allow', async () => {
    const res = await server.app.inject({ method: 'GET', url: '/secret' });
    expect([res.statusCode, res.headers.allow, res.json()]).toEqual([405, 'POST', { error: 'Method Not Allowed', code: 'SF_ERR_METHOD_NOT_ALLOWED' }]);
    const missing = await server.app.inject({ method: 'GET', url: '/nowhere' });
    expect([missing.statusCode, missing.headers.allow]).toEqual([404, undefined]);
  });
});

describe('codes on /v2', () => {
  it('puts the catalogue code in /v2 404 and 429 bodies too', async () => {
    const limited = new ServeFnServer({ models: [Faulty], collectProcessMetrics: false, security: { rateLimit: { max: 1, windowMs: 60_000 } } });
    await limited.start();
    try {
      const missing = await limited.app.inject({ method: 'GET', url: '/v2/models/nope' });
      expect([missing.statusCode, missing.json().code]).toEqual([404, 'SF_ERR_MODEL_UNKNOWN']);
      const over = await limited.app.inject({ method: 'GET', url: '/v2' });
      expect([over.statusCode, over.json().code]).toEqual([429, 'SF_ERR_RATE_LIMITED']);
    } finally {
      await limited.close();
    }
  });
});

describe('JSON bodies of user routes', () => {
  it(`answers nesting deeper than ${MAX_JSON_DEPTH} levels with 422 json_invalid, and keeps serving`, async () => {
    for (const deep of ['['.repeat(10_000) + ']'.repeat(10_000), '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)]) {
      const res = await post('/echo', `{"text":${deep}}`);
      expect(res.statusCode).toBe(422);
      expect(res.json().detail).toEqual([
        {
          loc: ['body'],
          msg: 'JSON decode error',
          type: 'json_invalid',
          input: {},
          ctx: { error: `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.` },
        },
      ]);
    }
    const within = '['.repeat(MAX_JSON_DEPTH - 1) + ']'.repeat(MAX_JSON_DEPTH - 1);
    expect((await post('/echo', `{"a":${within}}`)).statusCode).toBe(200);
  });

  it('answers a body that is not UTF-8 with 422 json_invalid instead of reading U+FFFD into it', async () => {
    const bad = Buffer.concat([Buffer.from('{"text":"caf'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const res = await post('/echo', bad);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toEqual([{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid', input: {}, ctx: { error: 'the body is not valid UTF-8' } }]);
    expect((await post('/echo', Buffer.from('{"text":"café 你好"}'))).json()).toEqual({ text: 'café 你好' });
  });

  it('reads a gzip body, and answers an unknown Content-Encoding 415 naming the accepted ones', async () => {
    const gzipped = await post('/echo', gzipSync('{"a":1}'), { 'content-encoding': 'gzip' });
    expect([gzipped.statusCode, gzipped.json()]).toEqual([200, { a: 1 }]);
    const res = await post('/echo', '{"a":1}', { 'content-encoding': 'br' });
    expect([res.statusCode, res.headers['accept-encoding'], res.json()]).toEqual([
      415,
      'gzip, deflate',
      { error: "Content-Encoding 'br' is not supported; send gzip, deflate or identity.", code: 'SF_ERR_CONTENT_ENCODING_UNSUPPORTED' },
    ]);
  });

  it('answers a compressed body as a plain one: bad JSON and an empty body are 422s, identity is read as is', async () => {
    const bad = await post('/echo', gzipSync('{"a":'), { 'content-encoding': 'gzip' });
    expect([bad.statusCode, bad.json().detail[0].loc, bad.json().detail[0].type]).toEqual([422, ['body', 5], 'json_invalid']);
    const empty = await post('/echo', gzipSync(''), { 'content-encoding': 'gzip' });
    expect([empty.statusCode, empty.json().detail]).toEqual([422, [{ loc: ['body'], msg: 'Field required', type: 'missing', input: null }]]);
    const identity = await post('/echo', '{"a":2}', { 'content-encoding': ' Identity ' });
    expect([identity.statusCode, identity.json()]).toEqual([200, { a: 2 }]);
  });

  it('limits JSON bodies to 1 MiB, while multipart uploads keep the server body limit', async () => {
    const big = `{"a":"${'x'.repeat(1024 * 1024)}"}`;
    const res = await post('/echo', big);
    expect([res.statusCode, res.json()]).toEqual([413, { error: 'Request body is larger than the limit of 1048576 bytes.', code: 'SF_ERR_BODY_TOO_LARGE' }]);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(2 * 1024 * 1024)]), 'big.bin');
    const request = new Request('http://local/upload', { method: 'POST', body: form });
    const upload = await server.app.inject({
      method: 'POST',
      url: '/upload',
      headers: Object.fromEntries(request.headers),
      payload: Buffer.from(await request.arrayBuffer()),
    });
    expect([upload.statusCode, upload.body]).toEqual([200, String(2 * 1024 * 1024)]);
  });

  it('takes another JSON limit from the server option jsonBodyLimit', async () => {
    const small = new ServeFnServer({ models: [Faulty], collectProcessMetrics: false, jsonBodyLimit: 100 });
    await small.start();
    try {
      const res = await small.app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: `{"a":"${'x'.repeat(200)}"}` });
      expect([res.statusCode, res.json().error]).toEqual([413, 'Request body is larger than the limit of 100 bytes.']);
    } finally {
      await small.close();
    }
  });
});

describe('log levels', () => {
  it('logs a draining 503 as its one access line, without a stack', async () => {
    const draining = new ServeFnServer({
      models: [Faulty],
      collectProcessMetrics: false,
      logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line) as LogLine) } },
    });
    await draining.start();
    draining.state.set('draining');
    const res = await draining.app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json', 'x-request-id': 'drain-1' }, payload: '{}' });
    expect([res.statusCode, res.json().code]).toEqual([503, 'SF_ERR_DRAINING']);
    draining.state.set('ready');
    await draining.close();
    const logged = lines.filter((l) => l.reqId === 'drain-1' && l.msg !== 'incoming request' && l.msg !== 'request completed');
    expect(logged.map((l) => [l.level, l.msg.replace(/[\d.]+ ms$/, 'N ms'), l.err])).toEqual([[30, 'POST /echo 503 N ms', undefined]]);
  });
});
