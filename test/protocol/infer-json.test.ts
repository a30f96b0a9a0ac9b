import { describe, expect, it } from 'vitest';
import type { Datatype } from '../../src/spec/tensor.js';
import { FakeModel, FakeRepository, identityModel, simpleModel, simpleStringModel, versionedModel } from './fake-repository.js';
import { postInfer, protocolApp, wire } from './protocol-app.js';

const json = 'application/json';
const range = (n: number, f: (i: number) => unknown): unknown[] => Array.from({ length: n }, (_, i) => f(i));
const list = (values: unknown[]): string => JSON.stringify(values);

function simpleRequest(input0: unknown[], input1: unknown[], extra = ''): string {
  return (
    `{${extra}"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${list(input0)}},` +
    `{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":${list(input1)}}]}`
  );
}

describe('simple (Triton docs: INPUT0 = 0..15, INPUT1 = 1s)', () => {
  const input0 = range(16, (i) => i);
  const ones = range(16, () => 1);
  const expected =
    '{"model_name":"simple","model_version":"1","outputs":[' +
    `{"name":"OUTPUT0","datatype":"INT32","shape":[1,16],"data":${list(range(16, (i) => i + 1))}},` +
    `{"name":"OUTPUT1","datatype":"INT32","shape":[1,16],"data":${list(range(16, (i) => i - 1))}}]}`;

  it('answers OUTPUT0 = 1..16 and OUTPUT1 = -1..14 as JSON', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', simpleRequest(input0, ones));
    expect(wire(res)).toEqual({ status: 200, type: json, body: expected });
    expect(res.headers['inference-header-content-length']).toBeUndefined();
  });

  it('reads the body whatever its Content-Type, or without one, as Triton does', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded']) {
      const res = await app.inject({ method: 'POST', url: '/v2/models/simple/infer', headers: type ? { 'content-type': type } : {}, payload: simpleRequest(input0, ones) });
      expect(res.body, String(type)).toBe(expected);
    }
  });

  it('reads nested data the same as flat data', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', simpleRequest([input0], [ones]));
    expect(res.body).toBe(expected);
  });

  it('runs a batch of 2 through the batch dimension', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const body =
      `{"inputs":[{"name":"INPUT0","shape":[2,16],"datatype":"INT32","data":${list([input0, input0])}},` +
      `{"name":"INPUT1","shape":[2,16],"datatype":"INT32","data":${list(range(32, () => 2))}}]}`;
    const res = await postInfer(app, 'simple', body);
    expect(res.json().outputs[0]).toEqual({ name: 'OUTPUT0', datatype: 'INT32', shape: [2, 16], data: range(32, (i) => (i % 16) + 2) });
  });

  it('wraps around as INT32 arithmetic does', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', simpleRequest(range(16, () => 2147483647), ones));
    expect(res.json().outputs[0].data).toEqual(range(16, () => -2147483648));
  });
});

describe('simple_string', () => {
  it('adds and subtracts decimal strings: "1".."16" and "-1".."14"', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleStringModel()]));
    const body =
      `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"BYTES","data":${list(range(16, (i) => String(i)))}},` +
      `{"name":"INPUT1","shape":[1,16],"datatype":"BYTES","data":${list(range(16, () => '1'))}}]}`;
    const res = await postInfer(app, 'simple_string', body);
    expect(wire(res)).toEqual({
      status: 200,
      type: json,
      body:
        '{"model_name":"simple_string","model_version":"1","outputs":[' +
        `{"name":"OUTPUT0","datatype":"BYTES","shape":[1,16],"data":${list(range(16, (i) => String(i + 1)))}},` +
        `{"name":"OUTPUT1","datatype":"BYTES","shape":[1,16],"data":${list(range(16, (i) => String(i - 1)))}}]}`,
    });
  });
});

describe('every datatype in JSON', () => {
  const cases: { datatype: Datatype; request: string; response: string }[] = [
    { datatype: 'BOOL', request: '[true,false,true]', response: '[true,false,true]' },
    { datatype: 'UINT8', request: '[0,255,7]', response: '[0,255,7]' },
    { datatype: 'UINT16', request: '[0,65535,513]', response: '[0,65535,513]' },
    { datatype: 'UINT32', request: '[0,4294967295,66051]', response: '[0,4294967295,66051]' },
    { datatype: 'UINT64', request: '[0,"18446744073709551615",9007199254740991]', response: '[0,18446744073709551615,9007199254740991]' },
    { datatype: 'INT8', request: '[-128,127,0]', response: '[-128,127,0]' },
    { datatype: 'INT16', request: '[-32768,32767,-1]', response: '[-32768,32767,-1]' },
    { datatype: 'INT32', request: '[-2147483648,2147483647,-1]', response: '[-2147483648,2147483647,-1]' },
    { datatype: 'INT64', request: '["-9223372036854775808","9223372036854775807",-5]', response: '[-9223372036854775808,9223372036854775807,-5]' },
    { datatype: 'FP16', request: '[1.5,-2,0.1]', response: '[1.5,-2,0.0999755859375]' },
    { datatype: 'BF16', request: '[1.5,-2,3.140625]', response: '[1.5,-2,3.140625]' },
    { datatype: 'FP32', request: '[1.5,-0.25,0.1]', response: '[1.5,-0.25,0.10000000149011612]' },
    { datatype: 'FP64', request: '[0.1,-1e300,5e-324]', response: '[0.1,-1e+300,5e-324]' },
    { datatype: 'BYTES', request: '["hello","","ü"]', response: '["hello","","ü"]' },
  ];

  for (const { datatype, request, response } of cases) {
    it(`${datatype} round-trips through the identity model with exact values`, async () => {
      const model = identityModel(datatype);
      const { app } = await protocolApp(new FakeRepository([model]));
      const res = await postInfer(app, model.info.name, `{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"${datatype}","data":${request}}]}`);
      expect(wire(res)).toEqual({
        status: 200,
        type: json,
        body: `{"model_name":"${model.info.name}","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"${datatype}","shape":[3],"data":${response}}]}`,
      });
    });
  }
});

describe('request fields', () => {
  it('echoes the id after the model name and version', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const res = await postInfer(app, 'simple', simpleRequest(range(16, () => 0), range(16, () => 0), '"id":"req-42",'));
    expect(res.body.startsWith('{"model_name":"simple","model_version":"1","id":"req-42","outputs":[')).toBe(true);
  });

  it('returns only the requested outputs, in the order asked', async () => {
    const { app } = await protocolApp(new FakeRepository([simpleModel()]));
    const zeros = range(16, () => 0);
    const only1 = await postInfer(app, 'simple', simpleRequest(zeros, range(16, () => 3)).replace(/}$/, ',"outputs":[{"name":"OUTPUT1"}]}'));
    expect(only1.json().outputs).toEqual([{ name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16], data: range(16, () => -3) }]);
    const both = await postInfer(app, 'simple', simpleRequest(zeros, zeros).replace(/}$/, ',"outputs":[{"name":"OUTPUT1"},{"name":"OUTPUT0"}]}'));
    expect(both.json().outputs.map((o: { name: string }) => o.name)).toEqual(['OUTPUT1', 'OUTPUT0']);
  });

  it('passes priority and timeout to the scheduler, other parameters to the model, and keeps binary_data to itself', async () => {
    const simple = simpleModel();
    const { app } = await protocolApp(new FakeRepository([simple]));
    const zeros = range(16, () => 0);
    const params = '"parameters":{"priority":2,"timeout":1500,"binary_data_output":false,"sequence_id":7,"sequence_start":true,"sequence_end":false,"triton_x":"y"},';
    const body = simpleRequest(zeros, zeros, params).replace(/}$/, ',"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":false,"classification":2}}]}');
    expect((await postInfer(app, 'simple', body)).statusCode).toBe(200);
    const seen = simple.requests[0];
    expect(seen.priority).toBe(2);
    expect(seen.timeoutUs).toBe(1500);
    expect(seen.parameters).toEqual({ sequence_id: 7, sequence_start: true, sequence_end: false, triton_x: 'y' });
    expect(seen.outputs).toEqual([{ name: 'OUTPUT0', parameters: { classification: 2 } }]);
    expect(seen.signal).toBeInstanceOf(AbortSignal);
    expect(seen.signal?.aborted).toBe(false);
  });

  it('leaves out priority, timeout, parameters and outputs the request did not give', async () => {
    const simple = simpleModel();
    const { app } = await protocolApp(new FakeRepository([simple]));
    await postInfer(app, 'simple', simpleRequest(range(16, () => 0), range(16, () => 0)));
    expect(Object.keys(simple.requests[0]).sort()).toEqual(['inputs', 'signal']);
  });

  it('accepts a string sequence_id (sequence(string_id))', async () => {
    const simple = simpleModel();
    const { app } = await protocolApp(new FakeRepository([simple]));
    const res = await postInfer(app, 'simple', simpleRequest(range(16, () => 0), range(16, () => 0), '"parameters":{"sequence_id":"abc"},'));
    expect(res.statusCode).toBe(200);
    expect(simple.requests[0].parameters).toEqual({ sequence_id: 'abc' });
  });
});

describe('versions', () => {
  it('runs the asked version, and the newest without /versions', async () => {
    const { app } = await protocolApp(new FakeRepository([versionedModel('1'), versionedModel('2')]));
    const body = '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[21]}]}';
    const v1 = await app.inject({ method: 'POST', url: '/v2/models/versioned/versions/1/infer', headers: { 'content-type': 'application/json' }, payload: body });
    expect(v1.body).toBe('{"model_name":"versioned","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1],"data":[21]}]}');
    const latest = await postInfer(app, 'versioned', body);
    expect(latest.body).toBe('{"model_name":"versioned","model_version":"2","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1],"data":[42]}]}');
  });
});

describe('errors', () => {
  const zeros = range(16, () => 0);

  async function errorOf(model: FakeModel | FakeModel[], body: string, url?: string): Promise<[number, string]> {
    const { app } = await protocolApp(new FakeRepository(Array.isArray(model) ? model : [model]));
    const res = url
      ? await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: body })
      : await postInfer(app, (Array.isArray(model) ? model[0] : model).info.name, body);
    expect(res.headers['content-type']).toBe(json);
    return [res.statusCode, res.json().error];
  }

  it('404 for an unknown model or version', async () => {
    const body = simpleRequest(zeros, zeros);
    expect(await errorOf(simpleModel(), body, '/v2/models/missing/infer')).toEqual([404, "Request for unknown model: 'missing' is not found"]);
    expect(await errorOf(simpleModel(), body, '/v2/models/simple/versions/2/infer')).toEqual([404, "Request for unknown model: 'simple' version 2 is not found"]);
  });

  it('503 when the model is not ready', async () => {
    const simple = simpleModel();
    simple.isReady = false;
    expect(await errorOf(simple, simpleRequest(zeros, zeros))).toEqual([503, "Model 'simple' version 1 is not ready"]);
    expect(simple.requests).toEqual([]);
  });

  it('501 for a decoupled model, with Triton\'s message', async () => {
    const decoupled = new FakeModel({ name: 'stream', decoupled: true, inputs: [], outputs: [], compute: () => [] });
    expect(await errorOf(decoupled, '{"inputs":[]}')).toEqual([501, "HTTP end point doesn't support models with decoupled transaction policy"]);
  });

  it('400 for malformed or empty JSON', async () => {
    const [status, message] = await errorOf(simpleModel(), '{"inputs":[');
    expect(status).toBe(400);
    expect(message).toMatch(/^Request body is not valid JSON: /);
    expect(await errorOf(simpleModel(), '')).toEqual([400, 'Request body is not valid JSON: the body is empty']);
  });

  it('400 for a body that is not an object, or inputs that are not a list', async () => {
    expect(await errorOf(simpleModel(), '[1,2]')).toEqual([400, 'The inference request must be a JSON object with "inputs", got [1,2].']);
    expect(await errorOf(simpleModel(), '{"inputs":{}}')).toEqual([400, '"inputs" must be an array of tensors, got {}.']);
  });

  it('400 for data that does not fit the shape or datatype', async () => {
    const short = '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":[1,2,3]},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":[]}]}';
    expect(await errorOf(simpleModel(), short)).toEqual([400, "Tensor 'INPUT0': shape [1,16] needs 16 elements, got 3."]);
    const unknownType = '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT128","data":[1]}]}';
    expect(await errorOf(simpleModel(), unknownType)).toEqual([
      400,
      "Tensor 'INPUT0': unknown datatype \"INT128\"; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, FP32, FP64, BF16, BYTES.",
    ]);
    const outOfRange = '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"UINT8","data":[256]}]}';
    expect(await errorOf(identityModel('UINT8'), outOfRange)).toEqual([400, "Tensor 'INPUT0': element 0 is 256: out of range for UINT8 [0, 255]."]);
    const imprecise = '{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT64","data":[9223372036854775807]}]}';
    expect((await errorOf(identityModel('INT64'), imprecise))[1]).toMatch(/where JSON numbers lose precision; send it as a string/);
  });

  it("400 from the model's input checks: wrong datatype, missing input", async () => {
    const fp32 = `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","data":${list(zeros)}},{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":${list(zeros)}}]}`;
    expect(await errorOf(simpleModel(), fp32)).toEqual([400, "Tensor 'INPUT0': expected datatype INT32, got FP32."]);
    const one = `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${list(zeros)}}]}`;
    expect(await errorOf(simpleModel(), one)).toEqual([400, "Expected input 'INPUT1' for model 'simple' is missing."]);
  });

  it('400 for an output the model does not have, before the model runs', async () => {
    const simple = simpleModel();
    const body = simpleRequest(zeros, zeros).replace(/}$/, ',"outputs":[{"name":"OUTPUT9"}]}');
    expect(await errorOf(simple, body)).toEqual([400, "Unexpected inference output 'OUTPUT9' for model 'simple'."]);
    expect(simple.requests).toEqual([]);
  });

  it('400 for mistyped request fields and reserved parameters', async () => {
    const cases: [string, string][] = [
      ['"id":5,', "Unable to parse 'id': expected a string, got 5."],
      ['"parameters":[1],', "Unable to parse 'parameters' of the request: expected an object of string, number or boolean values, got [1]."],
      ['"parameters":{"priority":-1},', 'Priority -1 is out of range: give a non-negative integer (1 = highest, 0 = the default level).'],
      ['"parameters":{"timeout":"soon"},', 'Timeout "soon" is invalid: give a non-negative integer number of microseconds.'],
      ['"parameters":{"binary_data_output":"yes"},', "Unable to parse 'binary_data_output': expected a boolean, got \"yes\"."],
      ['"parameters":{"sequence_id":-3},', "Unable to parse 'sequence_id': expected a non-negative integer or a string, got -3."],
      ['"parameters":{"sequence_end":1},', "Unable to parse 'sequence_end': expected a boolean, got 1."],
    ];
    for (const [extra, message] of cases) {
      expect(await errorOf(simpleModel(), simpleRequest(zeros, zeros, extra)), extra).toEqual([400, message]);
    }
    const badOutput = simpleRequest(zeros, zeros).replace(/}$/, ',"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":"no"}}]}');
    expect(await errorOf(simpleModel(), badOutput)).toEqual([400, "Unable to parse 'binary_data' of output 'OUTPUT0': expected a boolean, got \"no\"."]);
    const namelessOutput = simpleRequest(zeros, zeros).replace(/}$/, ',"outputs":[{}]}');
    expect(await errorOf(simpleModel(), namelessOutput)).toEqual([400, 'Each requested output must be an object with a "name" string, got {}.']);
  });

  it("500 with the code and the request id, not the model's message, when the model fails in production", async () => {
    const broken = new FakeModel({
      name: 'broken',
      inputs: [],
      outputs: [],
      compute: () => {
        throw new Error('db password is hunter2');
      },
    });
    const { app } = await protocolApp(new FakeRepository([broken]));
    const res = await postInfer(app, 'broken', '{"inputs":[]}', { 'x-request-id': 'trace-7' });
    expect([res.statusCode, res.headers['x-request-id'], res.body]).toEqual([
      500,
      'trace-7',
      '{"error":"Internal Server Error","code":"SF_ERR_EXECUTION_FAILED","request_id":"trace-7"}',
    ]);
  });

  it('500 when the model leaves out an output that was asked for, with the message in development', async () => {
    const forgetful = new FakeModel({ name: 'forgetful', inputs: [], outputs: [{ name: 'OUT', datatype: 'INT32', shape: [1] }], compute: () => [] });
    const { app } = await protocolApp(new FakeRepository([forgetful]), { exposeErrors: true });
    const res = await postInfer(app, 'forgetful', '{"inputs":[],"outputs":[{"name":"OUT"}]}');
    expect([res.statusCode, res.json()]).toEqual([
      500,
      {
        error: "Model 'forgetful' failed in infer: the requested output 'OUT' is not among the outputs it returned (none).",
        code: 'SF_ERR_EXECUTION_FAILED',
      },
    ]);
  });
});
