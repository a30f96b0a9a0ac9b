import { connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import type { Datatype } from '../../src/spec/tensor.js';
import { FakeRepository, identityModel, simpleModel, simpleStringModel } from './fake-repository.js';
import { binaryBody, postInfer, protocolApp, splitResponse } from './protocol-app.js';

/** Little-endian element bytes written with Buffer's own writers, independent of serve-fn's codec. */
function le(values: readonly (number | bigint)[], size: number, write: (b: Buffer, v: never, offset: number) => unknown): Buffer {
  const b = Buffer.alloc(values.length * size);
  values.forEach((v, i) => write(b, v as never, i * size));
  return b;
}

/** BYTES on the wire: each element as a 4-byte little-endian length and its bytes. */
function bytesElements(...elements: Buffer[]): Buffer {
  return Buffer.concat(elements.flatMap((e) => [le([e.length], 4, (b, v, o) => b.writeUInt32LE(v, o)), e]));
}

const int32s = (values: number[]): Buffer => le(values, 4, (b, v, o) => b.writeInt32LE(v, o));
const range = (n: number, f: (i: number) => number): number[] => Array.from({ length: n }, (_, i) => f(i));

/** Per datatype: three elements as wire bytes and as the JSON the response should hold. */
const CASES: { datatype: Datatype; wire: Buffer; json: string }[] = [
  { datatype: 'BOOL', wire: Buffer.from([1, 0, 1]), json: '[true,false,true]' },
  { datatype: 'UINT8', wire: Buffer.from([0, 255, 7]), json: '[0,255,7]' },
  { datatype: 'UINT16', wire: Buffer.from([0x00, 0x00, 0xff, 0xff, 0x01, 0x02]), json: '[0,65535,513]' },
  { datatype: 'UINT32', wire: le([0, 4294967295, 66051], 4, (b, v, o) => b.writeUInt32LE(v, o)), json: '[0,4294967295,66051]' },
  { datatype: 'UINT64', wire: le([0n, 18446744073709551615n, 5n], 8, (b, v, o) => b.writeBigUInt64LE(v, o)), json: '[0,18446744073709551615,5]' },
  { datatype: 'INT8', wire: Buffer.from([0x80, 0x7f, 0xff]), json: '[-128,127,-1]' },
  { datatype: 'INT16', wire: le([-32768, 32767, -1], 2, (b, v, o) => b.writeInt16LE(v, o)), json: '[-32768,32767,-1]' },
  { datatype: 'INT32', wire: int32s([-2147483648, 2147483647, -1]), json: '[-2147483648,2147483647,-1]' },
  { datatype: 'INT64', wire: le([-9223372036854775808n, 9223372036854775807n, -5n], 8, (b, v, o) => b.writeBigInt64LE(v, o)), json: '[-9223372036854775808,9223372036854775807,-5]' },
  // 1.5 = 0x3E00, -2 = 0xC000, 0x2E66 is FP16's nearest to 0.1.
  { datatype: 'FP16', wire: le([0x3e00, 0xc000, 0x2e66], 2, (b, v, o) => b.writeUInt16LE(v, o)), json: '[1.5,-2,0.0999755859375]' },
  { datatype: 'BF16', wire: le([0x3fc0, 0xc000, 0x4049], 2, (b, v, o) => b.writeUInt16LE(v, o)), json: '[1.5,-2,3.140625]' },
  { datatype: 'FP32', wire: le([1.5, -0.25, 0.1], 4, (b, v, o) => b.writeFloatLE(v, o)), json: '[1.5,-0.25,0.10000000149011612]' },
  { datatype: 'FP64', wire: le([0.1, -1e300, 5e-324], 8, (b, v, o) => b.writeDoubleLE(v, o)), json: '[0.1,-1e+300,5e-324]' },
  { datatype: 'BYTES', wire: bytesElements(Buffer.from('hello'), Buffer.alloc(0), Buffer.from('ü')), json: '["hello","","ü"]' },
];

describe('binary tensor data, every datatype', () => {
  for (const { datatype, wire, json } of CASES) {
    const name = `identity_${datatype.toLowerCase()}`;
    const input = `{"name":"INPUT0","shape":[3],"datatype":"${datatype}","parameters":{"binary_data_size":${wire.length}}}`;

    it(`${datatype}: binary in, binary out gives back the same bytes after the JSON header`, async () => {
      const { app } = await protocolApp(new FakeRepository([identityModel(datatype)]));
      const { body, headers } = binaryBody(`{"inputs":[${input}],"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`, wire);
      const res = await postInfer(app, name, body, headers);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/octet-stream');
      expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length);
      const parts = splitResponse(res);
      expect(parts.json).toBe(
        `{"model_name":"${name}","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"${datatype}","shape":[3],"parameters":{"binary_data_size":${wire.length}}}]}`,
      );
      expect(parts.binary.equals(wire)).toBe(true);
    });

    it(`${datatype}: binary in, JSON out reads the exact values`, async () => {
      const { app } = await protocolApp(new FakeRepository([identityModel(datatype)]));
      const { body, headers } = binaryBody(`{"inputs":[${input}]}`, wire);
      const res = await postInfer(app, name, body, headers);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.body).toBe(`{"model_name":"${name}","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"${datatype}","shape":[3],"data":${json}}]}`);
    });
  }

  it('binary_data_output turns every output binary unless an output says otherwise', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const json =
      '{"parameters":{"binary_data_output":true},"inputs":[' +
      '{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
      '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
      '"outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT1","parameters":{"binary_data":false}}]}';
    const { body, headers } = binaryBody(json, int32s(range(16, (i) => i)), int32s(range(16, () => 1)));
    const res = await postInfer(app, 'simple', body, headers);
    const parts = splitResponse(res);
    expect(parts.json).toBe(
      '{"model_name":"simple","model_version":"1","outputs":[' +
        '{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},' +
        `{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":${JSON.stringify(range(16, (i) => i - 1))}}]}`,
    );
    expect(parts.binary.equals(int32s(range(16, (i) => i + 1)))).toBe(true);
  });

  it('mixes a JSON input with a binary one, and keeps binary outputs in JSON order', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const json =
      '{"inputs":[' +
      `{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(range(16, (i) => 10 * i))}},` +
      '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
      '"outputs":[{"name":"OUTPUT1","parameters":{"binary_data":true}},{"name":"OUTPUT0","parameters":{"binary_data":true}}]}';
    const { body, headers } = binaryBody(json, int32s(range(16, (i) => i)));
    const parts = splitResponse(await postInfer(app, 'simple', body, headers));
    expect(JSON.parse(parts.json).outputs.map((o: { name: string }) => o.name)).toEqual(['OUTPUT1', 'OUTPUT0']);
    expect(parts.binary.equals(Buffer.concat([int32s(range(16, (i) => 9 * i)), int32s(range(16, (i) => 11 * i))]))).toBe(true);
  });

  it('simple_string over binary BYTES: length-prefixed elements both ways', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleStringModel()]));
    const in0 = bytesElements(...range(16, (i) => i).map((i) => Buffer.from(String(i))));
    const in1 = bytesElements(...range(16, () => 1).map((i) => Buffer.from(String(i))));
    const json =
      '{"inputs":[' +
      `{"name":"INPUT0","shape":[1,16],"datatype":"BYTES","parameters":{"binary_data_size":${in0.length}}},` +
      `{"name":"INPUT1","shape":[1,16],"datatype":"BYTES","parameters":{"binary_data_size":${in1.length}}}],` +
      '"parameters":{"binary_data_output":true}}';
    const { body, headers } = binaryBody(json, in0, in1);
    const parts = splitResponse(await postInfer(app, 'simple_string', body, headers));
    const out0 = bytesElements(...range(16, (i) => i + 1).map((i) => Buffer.from(String(i))));
    const out1 = bytesElements(...range(16, (i) => i - 1).map((i) => Buffer.from(String(i))));
    expect(parts.json).toBe(
      '{"model_name":"simple_string","model_version":"1","outputs":[' +
        `{"name":"OUTPUT0","datatype":"BYTES","shape":[1,16],"parameters":{"binary_data_size":${out0.length}}},` +
        `{"name":"OUTPUT1","datatype":"BYTES","shape":[1,16],"parameters":{"binary_data_size":${out1.length}}}]}`,
    );
    expect(parts.binary.equals(Buffer.concat([out0, out1]))).toBe(true);
  });

  it('refuses BYTES that are not UTF-8 as JSON output, and sends them as binary', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('BYTES')]));
    const wire = bytesElements(Buffer.from([0xff, 0xfe]));
    const input = `{"name":"INPUT0","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":${wire.length}}}`;
    const jsonOut = binaryBody(`{"inputs":[${input}]}`, wire);
    const asJson = await postInfer(app, 'identity_bytes', jsonOut.body, jsonOut.headers);
    expect([asJson.statusCode, asJson.json().error]).toEqual([
      400,
      "Tensor 'OUTPUT0': element 0 is not valid UTF-8, so it cannot be sent as JSON; request this output with \"binary_data\": true.",
    ]);
    const { body, headers } = binaryBody(`{"inputs":[${input}],"parameters":{"binary_data_output":true}}`, wire);
    expect(splitResponse(await postInfer(app, 'identity_bytes', body, headers)).binary.equals(wire)).toBe(true);
  });
});

describe('raw binary requests (Inference-Header-Content-Length: 0)', () => {
  const raw = { 'content-type': 'application/octet-stream', 'inference-header-content-length': '0' };

  it('feeds the body to the only input, deduces the variable dimension and answers all outputs binary', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('FP32')]));
    const wire = le([1, 2, 3], 4, (b, v, o) => b.writeFloatLE(v, o));
    const res = await postInfer(app, 'identity_fp32', wire, raw);
    const parts = splitResponse(res);
    expect(parts.json).toBe('{"model_name":"identity_fp32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[3],"parameters":{"binary_data_size":12}}]}');
    expect(parts.binary.equals(wire)).toBe(true);
  });

  it('treats the body as batch 1 for a batching model', async () => {
    const model = identityModel('INT16', [2], 4);
    const { app } = await protocolApp(new FakeRepository([model]));
    const res = await postInfer(app, 'identity_int16', Buffer.from([1, 0, 2, 0]), raw);
    expect(JSON.parse(splitResponse(res).json).outputs[0].shape).toEqual([1, 2]);
    expect(model.requests[0].inputs[0].shape).toEqual([1, 2]);
  });

  it('sends a BYTES body as one element for a model with input shape [1]', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('BYTES', [1])]));
    const res = await postInfer(app, 'identity_bytes', Buffer.from('héllo'), raw);
    const parts = splitResponse(res);
    expect(JSON.parse(parts.json).outputs[0]).toEqual({ name: 'OUTPUT0', datatype: 'BYTES', shape: [1], parameters: { binary_data_size: 10 } });
    expect(parts.binary.equals(bytesElements(Buffer.from('héllo')))).toBe(true);
  });

  it("refuses models it cannot deduce a shape for, with Triton core's messages", async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel(), identityModel('FP32', [-1, -1]), identityModel('BYTES')]));
    const cases: [string, string][] = [
      ['simple', "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'simple' model configuration"],
      ['identity_fp32', "The shape of the raw input 'INPUT0' can not be deduced because there are more than one variable-sized dimension"],
      ['identity_bytes', "For BYTE datatype raw input 'INPUT0', the model must have input shape [1]"],
    ];
    for (const [model, message] of cases) {
      const res = await postInfer(app, model, Buffer.alloc(8), raw);
      expect([res.statusCode, res.json().error], model).toEqual([400, message]);
    }
  });

  it('400 when the body does not fill whole elements', async () => {
    const { app } = await protocolApp(new FakeRepository([identityModel('FP32')]));
    const res = await postInfer(app, 'identity_fp32', Buffer.alloc(10), raw);
    expect([res.statusCode, res.json().error]).toEqual([400, "Tensor 'INPUT0': raw binary data is 10 bytes, which does not fill shape [-1] of FP32 (4 bytes an element)."]);
  });
});

describe('binary framing errors', () => {
  const input = (size: number): string => `{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"INT32","parameters":{"binary_data_size":${size}}}]}`;

  async function errorOf(body: Buffer, headers: Record<string, string>): Promise<[number, string]> {
    const { app } = await protocolApp(new FakeRepository([identityModel('INT32'), identityModel('BYTES')]));
    const model = body.includes('"BYTES"') ? 'identity_bytes' : 'identity_int32';
    const res = await postInfer(app, model, body, headers);
    return [res.statusCode, res.json().error];
  }

  it('400 when the header length is larger than the body', async () => {
    const { body } = binaryBody(input(8), int32s([1, 2]));
    expect(await errorOf(body, { 'content-type': 'application/octet-stream', 'inference-header-content-length': '999' })).toEqual([
      400,
      `Inference-Header-Content-Length is 999, larger than the request body (${body.length} bytes).`,
    ]);
  });

  it('400 when the header length is not a number', async () => {
    const { body } = binaryBody(input(8), int32s([1, 2]));
    expect(await errorOf(body, { 'inference-header-content-length': 'abc' })).toEqual([400, "Inference-Header-Content-Length must be a non-negative integer, got 'abc'."]);
  });

  it('400 when binary_data_size runs past the body, or bytes are left over', async () => {
    const short = binaryBody(input(8), int32s([1]));
    expect(await errorOf(short.body, short.headers)).toEqual([400, "Tensor 'INPUT0': binary_data_size is 8, but only 4 bytes of binary data remain."]);
    const long = binaryBody(input(8), int32s([1, 2, 3]));
    expect(await errorOf(long.body, long.headers)).toEqual([
      400,
      "The body has 12 bytes of binary data after the JSON header, but the inputs' binary_data_size parameters add up to 8.",
    ]);
  });

  it('400 when an input has both data and binary_data_size', async () => {
    const both = binaryBody('{"inputs":[{"name":"INPUT0","shape":[2],"datatype":"INT32","data":[1,2],"parameters":{"binary_data_size":8}}]}', int32s([1, 2]));
    expect(await errorOf(both.body, both.headers)).toEqual([400, "Tensor 'INPUT0': has both \"data\" and binary_data_size; send the elements one way only."]);
  });

  it('400 when a BYTES element is cut off', async () => {
    const cut = Buffer.concat([le([10], 4, (b, v, o) => b.writeUInt32LE(v, o)), Buffer.from('abc')]);
    const { body, headers } = binaryBody(`{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":${cut.length}}}]}`, cut);
    expect(await errorOf(body, headers)).toEqual([400, "Tensor 'INPUT0': BYTES element 0 declares 10 bytes, but only 3 remain."]);
  });

  it('400 when a binary input comes without the header length (the whole body is then JSON)', async () => {
    const body = Buffer.from(input(8));
    expect(await errorOf(body, {})).toEqual([400, "Tensor 'INPUT0': binary_data_size is 8, but only 0 bytes of binary data remain."]);
  });
});

describe('on a real socket', () => {
  it('answers a hand-written binary request for `simple` byte for byte', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const json =
      '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
      '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],' +
      '"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},{"name":"OUTPUT1","parameters":{"binary_data":true}}]}';
    const payload = Buffer.concat([Buffer.from(json), int32s(range(16, (i) => i)), int32s(range(16, () => 1))]);
    const head =
      'POST /v2/models/simple/infer HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n' +
      `Inference-Header-Content-Length: ${json.length}\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n`;
    const reply = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.concat([Buffer.from(head), payload])));
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => resolve(Buffer.concat(chunks)));
      socket.on('error', reject);
    });
    const split = reply.indexOf('\r\n\r\n');
    const lines = reply.subarray(0, split).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const body = reply.subarray(split + 4);
    const expectedJson =
      '{"model_name":"simple","model_version":"1","outputs":[' +
      '{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}},' +
      '{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"parameters":{"binary_data_size":64}}]}';
    expect(lines[0]).toBe('HTTP/1.1 200 OK');
    expect(headers['content-type']).toBe('application/octet-stream');
    expect(headers['inference-header-content-length']).toBe(String(expectedJson.length));
    expect(headers['content-length']).toBe(String(expectedJson.length + 128));
    expect(body.equals(Buffer.concat([Buffer.from(expectedJson), int32s(range(16, (i) => i + 1)), int32s(range(16, (i) => i - 1))]))).toBe(true);
  });

  it('aborts the request it queued when the client goes away before the answer', async () => {
    const simple = simpleModel();
    let release!: () => void;
    simple.hold = new Promise<void>((resolve) => (release = resolve));
    const { app } = await protocolApp(new FakeRepository([simple]));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const json = `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(range(16, () => 0))}},` +
      `{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(range(16, () => 0))}}]}`;
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`POST /v2/models/simple/infer HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`),
    );
    await vi.waitFor(() => expect(simple.requests).toHaveLength(1));
    expect(simple.requests[0].signal?.aborted).toBe(false);
    socket.destroy();
    await vi.waitFor(() => expect(simple.requests[0].signal?.aborted).toBe(true));
    release();
  });
});
