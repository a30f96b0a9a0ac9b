import { deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FakeRepository, identityModel, simpleModel } from './fake-repository.js';
import { postInfer, protocolApp } from './protocol-app.js';
import { MAX_JSON_DEPTH } from '../../src/validation/json-depth.js';

const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));
const request =
  `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(range(16, (i) => i))}},` +
  `{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(range(16, () => 1))}}]}`;
const answer =
  '{"model_name":"simple","model_version":"1","outputs":[' +
  `{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":${JSON.stringify(range(16, (i) => i + 1))}},` +
  `{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":${JSON.stringify(range(16, (i) => i - 1))}}]}`;

describe('compressed request bodies (Content-Encoding)', () => {
  for (const [coding, compress] of [['gzip', gzipSync], ['deflate', deflateSync]] as const) {
    it(`reads a ${coding} body`, async () => {
      const { app } = await protocolApp(new FakeRepository([simpleModel()]));
      const res = await postInfer(app, 'simple', compress(Buffer.from(request)), { 'content-encoding': coding });
      expect([res.statusCode, res.body]).toEqual([200, answer]);
    });
  }

  it('decompresses before splitting at Inference-Header-Content-Length, which counts decompressed bytes', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('INT32')]));
    const json = '{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":8}}]}';
    const body = Buffer.concat([Buffer.from(json), Buffer.from([7, 0, 0, 0, 9, 0, 0, 0])]);
    const res = await postInfer(app, 'identity_int32', gzipSync(body), {
      'content-type': 'application/octet-stream',
      'content-encoding': 'gzip',
      'inference-header-content-length': String(json.length),
    });
    expect(res.json().outputs[0].data).toEqual([7, 9]);
  });

  it('answers an unknown coding 415 and names the supported ones in Accept-Encoding (RFC 9110 §15.5.16)', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', Buffer.from(request), { 'content-encoding': 'br' });
    expect([res.statusCode, res.body, res.headers['accept-encoding']]).toEqual([415, '{"error":"Content-Encoding \'br\' is not supported; send gzip, deflate or identity.","code":"SF_ERR_CONTENT_ENCODING_UNSUPPORTED"}', 'gzip, deflate']);
  });

  it('answers a corrupt body 400', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
    expect([res.statusCode, res.json().error]).toEqual([400, 'Request body could not be decompressed as gzip: incorrect header check']);
  });

  it('applies the body limit to the decompressed size (413)', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]), { bodyLimit: 4096 });
    const bomb = gzipSync(Buffer.alloc(100_000, 0x20));
    expect(bomb.length).toBeLessThan(4096);
    const res = await postInfer(app, 'simple', bomb, { 'content-encoding': 'gzip' });
    expect([res.statusCode, res.body]).toEqual([413, '{"error":"Request body is larger than the limit of 4096 bytes.","code":"SF_ERR_BODY_TOO_LARGE"}']);
  });
});

describe('compressed responses (Accept-Encoding)', () => {
  const cases: [string, string | undefined, (b: Buffer) => Buffer][] = [
    ['gzip', 'gzip', gunzipSync],
    ['deflate', 'deflate', inflateSync],
    ['deflate;q=0.9, gzip;q=0.5', 'deflate', inflateSync],
    ['br, gzip;q=0.1', 'gzip', gunzipSync],
    ['identity, gzip;q=0.5', undefined, (b) => b],
    ['gzip;q=0', undefined, (b) => b],
  ];
  for (const [accept, coding, decompress] of cases) {
    it(`Accept-Encoding: ${accept} → ${coding ?? 'no compression'}`, async () => {
      const { app } = await protocolApp(new FakeRepository([simpleModel()]));
      const res = await postInfer(app, 'simple', request, { 'accept-encoding': accept });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-encoding']).toBe(coding);
      expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length);
      expect(decompress(res.rawPayload).toString()).toBe(answer);
    });
  }

  it('keeps Inference-Header-Content-Length as the uncompressed JSON length', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('INT32')]));
    const body = '{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"INT32","data":[5,6]}],"parameters":{"binary_data_output":true}}';
    const res = await postInfer(app, 'identity_int32', body, { 'accept-encoding': 'gzip' });
    const plain = gunzipSync(res.rawPayload);
    const length = Number(res.headers['inference-header-content-length']);
    expect(plain.subarray(0, length).toString()).toBe(
      '{"model_name":"identity_int32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}]}',
    );
    expect([...plain.subarray(length)]).toEqual([5, 0, 0, 0, 6, 0, 0, 0]);
  });
});

describe('body limit', () => {
  it('answers a body over the limit 413 with the error shape of /v2', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]), { bodyLimit: 100 });
    const res = await postInfer(app, 'simple', request);
    expect([res.statusCode, res.body]).toEqual([413, '{"error":"Request body is larger than the limit of 100 bytes.","code":"SF_ERR_BODY_TOO_LARGE"}']);
  });

  it('defaults to 64 MiB, above the server-wide limit of the user routes', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('UINT8')]));
    const size = 2 * 1024 * 1024;
    const json = `{"inputs":[{"name":"INPUT0","shape":[${size}],"datatype":"UINT8","parameters":{"binary_data_size":${size}}}],"parameters":{"binary_data_output":true}}`;
    const res = await postInfer(app, 'identity_uint8', Buffer.concat([Buffer.from(json), Buffer.alloc(size, 3)]), {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(json.length),
    });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.length - Number(res.headers['inference-header-content-length'])).toBe(size);
    const userRoute = await app.inject({ method: 'POST', url: '/user/echo', headers: { 'content-type': 'application/json' }, payload: `"${'x'.repeat(size)}"` });
    expect(userRoute.statusCode).toBe(413);
  });
});

describe('nesting limit', () => {
  const deep = '['.repeat(10_000) + ']'.repeat(10_000);
  const tooDeep = `{"error":"Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.","code":"SF_ERR_BODY_TOO_DEEP"}`;

  it(`answers JSON nested deeper than ${MAX_JSON_DEPTH} levels 400 in the /v2 error shape, wherever it nests, and keeps serving`, async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    for (const body of [
      `{"inputs":${deep}}`,
      `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${deep}}]}`,
      `{"id":${deep},"inputs":[]}`,
      `{"inputs":[],"parameters":{"x":${deep}}}`,
    ]) {
      const res = await postInfer(app, 'simple', body);
      expect([res.statusCode, res.body]).toEqual([400, tooDeep]);
    }
    const generate = await app.inject({ method: 'POST', url: '/v2/models/simple/generate', payload: `{"INPUT0":${deep}}` });
    expect([generate.statusCode, generate.body]).toEqual([400, tooDeep]);
    expect((await postInfer(app, 'simple', request)).body).toBe(answer);
  });
});
