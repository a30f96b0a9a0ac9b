import { deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FakeRepository, identityModel, simpleModel } from './fake-repository.js';
import { postInfer, protocolApp } from './protocol-app.js';

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

  it('answers an unknown coding 501 "Unsupported compression type" and names the supported ones', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', Buffer.from(request), { 'content-encoding': 'br' });
    expect([res.statusCode, res.body, res.headers['accept-encoding']]).toEqual([501, '{"error":"Unsupported compression type"}', 'gzip, deflate']);
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
    expect([res.statusCode, res.body]).toEqual([413, '{"error":"Request body is larger than the limit of 4096 bytes."}']);
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
    expect([res.statusCode, res.body]).toEqual([413, '{"error":"Request body is larger than the limit of 100 bytes."}']);
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
