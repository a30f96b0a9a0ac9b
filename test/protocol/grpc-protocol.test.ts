import { Client, credentials, loadPackageDefinition, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import type { GrpcFaultLogger } from '../../src/protocol/grpc/grpc-inference-service.js';
import { GRPC_PROTO_PATH, startGrpcServer, type GrpcServerHandle } from '../../src/protocol/grpc/grpc-server.js';
import type { Datatype } from '../../src/spec/tensor.js';
import { range } from '../fixtures/repository/repository-files.js';
import { FakeModel, FakeRepository, identityModel, simpleModel, simpleStringModel, versionedModel } from './fake-repository.js';
import { call, exchange, failure, inferenceMethod } from './grpc-raw.js';
import { TraceSettings } from '../../src/tracing/trace-settings.js';
import { protocolApp } from './protocol-app.js';
import { messages, packedInt64, parse, pb, rawBytes, strings, type Fields } from './protobuf-wire.js';

const open: { server: GrpcServerHandle; client: Client }[] = [];

afterEach(async () => {
  for (const { server, client } of open.splice(0)) {
    client.close();
    await server.close(100);
  }
});

interface ConnectOptions {
  readonly ready?: () => boolean;
  readonly maxMessageBytes?: number;
  readonly recorder?: InferenceRecorder;
  /** How the client decodes messages with the .proto (typedClient only). */
  readonly decode?: Options;
  readonly exposeErrors?: boolean;
  readonly logger?: GrpcFaultLogger;
  readonly traceSettings?: TraceSettings;
}

async function serve(repository: FakeRepository, options: ConnectOptions): Promise<GrpcServerHandle> {
  return startGrpcServer({
    repository,
    serverName: 'serve-fn',
    serverVersion: '0.1.0',
    recorder: options.recorder ?? new InferenceRecorder({ collectProcessMetrics: false }),
    ready: options.ready ?? (() => true),
    port: 0,
    host: '127.0.0.1',
    ...(options.maxMessageBytes === undefined ? {} : { maxMessageBytes: options.maxMessageBytes }),
    ...(options.exposeErrors === undefined ? {} : { exposeErrors: options.exposeErrors }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.traceSettings === undefined ? {} : { traceSettings: options.traceSettings }),
  });
}

async function connect(repository: FakeRepository, options: ConnectOptions = {}): Promise<Client> {
  const server = await serve(repository, options);
  const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
  open.push({ server, client });
  return client;
}

/** Numbers as JSON has them, enums by name, as Triton's JSON mapping writes a message. */
const AS_JSON: Options = { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false };

type TypedCall = (method: string, request?: object) => Promise<Record<string, unknown>>;

/** A client that encodes and decodes with the .proto through @grpc/proto-loader, as a generated client does. */
async function typedClient(repository: FakeRepository, options: ConnectOptions = {}): Promise<TypedCall> {
  const server = await serve(repository, options);
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, options.decode ?? AS_JSON));
  const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  const client = new Service(`127.0.0.1:${server.port}`, credentials.createInsecure());
  open.push({ server, client });
  return (method, request = {}) =>
    new Promise((resolve, reject) => {
      (client[method] as (r: object, cb: (err: ServiceError | null, res: Record<string, unknown>) => void) => void).call(client, request, (err, res) =>
        err ? reject(err) : resolve(res),
      );
    });
}

/** A bool response field 1 (`live`, `ready`): absent (proto3's default) or 0 is false. */
function flag(response: Buffer): boolean {
  const value = parse(response).get(1)?.[0]?.value;
  return value !== undefined && value !== 0n;
}

function int32s(values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeInt32LE(v, i * 4));
  return b;
}

/** ModelInferRequest.InferInputTensor: name 1, datatype 2, shape 3 (packed), contents 5. */
function input(name: string, datatype: string, shape: number[], ...rest: Buffer[]): Buffer {
  return pb.message(5, pb.string(1, name), pb.string(2, datatype), pb.packedVarints(3, shape), ...rest);
}

function outputsOf(response: Fields): { name: string; datatype: string; shape: number[] }[] {
  return messages(response, 5).map((o) => ({ name: strings(o, 1)[0], datatype: strings(o, 2)[0], shape: packedInt64(o, 3) }));
}

describe('health and metadata over gRPC', () => {
  it('ServerLive answers live = true (field 1)', async () => {
    const client = await connect(new FakeRepository([]));
    expect([...(await call(client, 'ServerLive'))]).toEqual([0x08, 0x01]);
  });

  it('ServerReady follows the server and every model', async () => {
    const simple = simpleModel();
    let serving = true;
    const client = await connect(new FakeRepository([simple]), { ready: () => serving });
    expect([...(await call(client, 'ServerReady'))]).toEqual([0x08, 0x01]);
    simple.isReady = false;
    expect(flag(await call(client, 'ServerReady'))).toBe(false);
    simple.isReady = true;
    serving = false;
    expect(flag(await call(client, 'ServerReady'))).toBe(false);
  });

  it('ServerMetadata answers name, version and extensions', async () => {
    const client = await connect(new FakeRepository([]));
    const res = parse(await call(client, 'ServerMetadata'));
    expect([strings(res, 1), strings(res, 2), strings(res, 3)]).toEqual([
      ['serve-fn'],
      ['0.1.0'],
      // binary_tensor_data is HTTP's (extension_binary_data.md); gRPC carries raw_input_contents in its core messages.
      // system_shared_memory where the system has /dev/shm (test/protocol/system-shared-memory-grpc.test.ts).
      ['model_configuration', 'model_repository', 'statistics', 'schedule_policy', 'parameters', 'sequence', 'trace', 'system_shared_memory'],
    ]);
  });

  it('ModelReady is true or false per version, and false (not an error) for a model or version not served, as Triton answers', async () => {
    const v1 = versionedModel('1');
    const client = await connect(new FakeRepository([v1, versionedModel('2')]));
    v1.isReady = false;
    expect([...(await call(client, 'ModelReady', pb.string(1, 'versioned')))]).toEqual([0x08, 0x01]);
    expect(flag(await call(client, 'ModelReady', Buffer.concat([pb.string(1, 'versioned'), pb.string(2, '1')])))).toBe(false);
    expect(flag(await call(client, 'ModelReady', pb.string(1, 'ghost')))).toBe(false);
    expect(flag(await call(client, 'ModelReady', Buffer.concat([pb.string(1, 'versioned'), pb.string(2, '5')])))).toBe(false);
  });

  it('ModelMetadata describes `simple` with the batch dimension as -1', async () => {
    const client = await connect(new FakeRepository([simpleModel()]));
    const res = parse(await call(client, 'ModelMetadata', pb.string(1, 'simple')));
    expect([strings(res, 1), strings(res, 2), strings(res, 3)]).toEqual([['simple'], ['1'], ['tensorflow_graphdef']]);
    const tensors = (field: number): unknown[] => messages(res, field).map((t) => [strings(t, 1)[0], strings(t, 2)[0], packedInt64(t, 3)]);
    expect(tensors(4)).toEqual([['INPUT0', 'INT32', [-1, 16]], ['INPUT1', 'INT32', [-1, 16]]]);
    expect(tensors(5)).toEqual([['OUTPUT0', 'INT32', [-1, 16]], ['OUTPUT1', 'INT32', [-1, 16]]]);
  });
});

describe('ModelInfer', () => {
  it('answers `simple` (INPUT0 = 0..15, INPUT1 = 1s) in raw_output_contents, echoing the id', async () => {
    const client = await connect(new FakeRepository([simpleModel()]));
    const request = Buffer.concat([
      pb.string(1, 'simple'),
      pb.string(3, 'req-1'),
      input('INPUT0', 'INT32', [1, 16]),
      input('INPUT1', 'INT32', [1, 16]),
      pb.bytes(7, int32s(range(16, (i) => i))),
      pb.bytes(7, int32s(range(16, () => 1))),
    ]);
    const res = parse(await call(client, 'ModelInfer', request));
    expect([strings(res, 1), strings(res, 2), strings(res, 3)]).toEqual([['simple'], ['1'], ['req-1']]);
    expect(outputsOf(res)).toEqual([
      { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16] },
    ]);
    expect(rawBytes(res, 6)).toEqual([int32s(range(16, (i) => i + 1)), int32s(range(16, (i) => i - 1))]);
  });

  it('leaves the signal of a request it answered unaborted after the call closes', async () => {
    const model = simpleModel();
    const server = await serve(new FakeRepository([model]), {});
    const client = new Client(`127.0.0.1:${server.port}`, credentials.createInsecure());
    const request = Buffer.concat([
      pb.string(1, 'simple'),
      input('INPUT0', 'INT32', [1, 16]),
      input('INPUT1', 'INT32', [1, 16]),
      pb.bytes(7, int32s(range(16, (i) => i))),
      pb.bytes(7, int32s(range(16, () => 1))),
    ]);
    await call(client, 'ModelInfer', request);
    // Closing the server waits for every stream to close, which is when grpc-js reports a cancel.
    client.close();
    await server.close(100);
    await new Promise((resolve) => setImmediate(resolve));
    expect(model.requests[0].signal?.aborted).toBe(false);
  });

  it('reads typed contents: `simple` with int_contents, and requested outputs in the order asked', async () => {
    const client = await connect(new FakeRepository([simpleModel()]));
    const contents = (values: number[]): Buffer => pb.message(5, pb.packedVarints(2, values));
    const request = Buffer.concat([
      pb.string(1, 'simple'),
      input('INPUT0', 'INT32', [1, 16], contents(range(16, (i) => i))),
      input('INPUT1', 'INT32', [1, 16], contents(range(16, () => 1))),
      pb.message(6, pb.string(1, 'OUTPUT1')),
    ]);
    const res = parse(await call(client, 'ModelInfer', request));
    expect(outputsOf(res).map((o) => o.name)).toEqual(['OUTPUT1']);
    expect(rawBytes(res, 6)).toEqual([int32s(range(16, (i) => i - 1))]);
    expect(strings(res, 3)).toEqual([]);
  });

  it('answers simple_string on bytes_contents', async () => {
    const client = await connect(new FakeRepository([simpleStringModel()]));
    const contents = (values: string[]): Buffer => pb.message(5, ...values.map((v) => pb.string(8, v)));
    const request = Buffer.concat([
      pb.string(1, 'simple_string'),
      input('INPUT0', 'BYTES', [1, 16], contents(range(16, (i) => i).map(String))),
      input('INPUT1', 'BYTES', [1, 16], contents(range(16, () => 1).map(String))),
    ]);
    const [out0] = rawBytes(parse(await call(client, 'ModelInfer', request)), 6);
    const expected = Buffer.concat(range(16, (i) => i + 1).flatMap((v) => [int32s([String(v).length]), Buffer.from(String(v))]));
    expect(out0.equals(expected)).toBe(true);
  });

  /** Per datatype: its InferTensorContents field encoding and the raw bytes the identity model must send back. */
  const TYPED: { datatype: Datatype; contents: Buffer; raw: Buffer }[] = [
    { datatype: 'BOOL', contents: pb.packedVarints(1, [true, false, true]), raw: Buffer.from([1, 0, 1]) },
    { datatype: 'INT8', contents: pb.packedVarints(2, [-128, 127, -1]), raw: Buffer.from([0x80, 0x7f, 0xff]) },
    { datatype: 'INT16', contents: pb.packedVarints(2, [-32768, 32767, 1]), raw: Buffer.from([0x00, 0x80, 0xff, 0x7f, 0x01, 0x00]) },
    { datatype: 'INT32', contents: pb.packedVarints(2, [-2147483648, 2147483647, 1]), raw: int32s([-2147483648, 2147483647, 1]) },
    {
      datatype: 'INT64',
      contents: pb.packedVarints(3, [-9223372036854775808n, 9223372036854775807n, -5n]),
      raw: Buffer.from('0000000000000080ffffffffffffff7ffbffffffffffffff', 'hex'),
    },
    { datatype: 'UINT8', contents: pb.packedVarints(4, [0, 255, 7]), raw: Buffer.from([0, 255, 7]) },
    { datatype: 'UINT16', contents: pb.packedVarints(4, [0, 65535, 513]), raw: Buffer.from([0, 0, 0xff, 0xff, 0x01, 0x02]) },
    { datatype: 'UINT32', contents: pb.packedVarints(4, [0, 4294967295, 66051]), raw: Buffer.from('00000000ffffffff03020100', 'hex') },
    { datatype: 'UINT64', contents: pb.packedVarints(5, [0n, 18446744073709551615n, 5n]), raw: Buffer.from('0000000000000000ffffffffffffffff0500000000000000', 'hex') },
    { datatype: 'FP32', contents: pb.packedFloats(6, [1.5, -0.25, 2]), raw: Buffer.from('0000c03f000080be00000040', 'hex') },
    { datatype: 'FP64', contents: pb.packedDoubles(7, [1.5, -0.25, 2]), raw: Buffer.from('000000000000f83f000000000000d0bf0000000000000040', 'hex') },
    { datatype: 'BYTES', contents: Buffer.concat([pb.string(8, 'hi'), pb.string(8, ''), pb.string(8, 'ü')]), raw: Buffer.from('02000000' + '6869' + '00000000' + '02000000' + 'c3bc', 'hex') },
  ];

  for (const { datatype, contents, raw } of TYPED) {
    it(`${datatype}: typed contents in, the same elements out as raw little-endian bytes`, async () => {
      const model = identityModel(datatype);
      const client = await connect(new FakeRepository([model]));
      const request = Buffer.concat([pb.string(1, model.info.name), input('INPUT0', datatype, [3], pb.message(5, contents))]);
      const res = parse(await call(client, 'ModelInfer', request));
      expect(outputsOf(res)).toEqual([{ name: 'OUTPUT0', datatype, shape: [3] }]);
      expect(rawBytes(res, 6)[0].toString('hex')).toBe(raw.toString('hex'));
    });
  }

  for (const datatype of ['FP16', 'BF16'] as const) {
    it(`${datatype}: raw_input_contents only`, async () => {
      const model = identityModel(datatype);
      const client = await connect(new FakeRepository([model]));
      const raw = Buffer.from([0x00, 0x3e, 0x00, 0xc0]);
      const res = parse(await call(client, 'ModelInfer', Buffer.concat([pb.string(1, model.info.name), input('INPUT0', datatype, [2]), pb.bytes(7, raw)])));
      expect(rawBytes(res, 6)).toEqual([raw]);
      const typed = Buffer.concat([pb.string(1, model.info.name), input('INPUT0', datatype, [2], pb.message(5, pb.packedFloats(6, [1, 2])))]);
      expect(await failure(call(client, 'ModelInfer', typed))).toEqual([
        status.INVALID_ARGUMENT,
        `unexpected explicit tensor data for input tensor 'INPUT0' for model 'identity_${datatype.toLowerCase()}' of type 'FP32', expected datatype '${datatype}'`,
      ]);
    });
  }

  it('passes parameters: priority and timeout to the scheduler, the rest to the model', async () => {
    const simple = simpleModel();
    const client = await connect(new FakeRepository([simple]));
    const param = (key: string, value: Buffer): Buffer => pb.mapEntry(4, key, value);
    const request = Buffer.concat([
      pb.string(1, 'simple'),
      param('priority', pb.varint(2, 1)),
      param('timeout', pb.varint(2, 2500)),
      param('sequence_id', pb.varint(5, 77)),
      param('sequence_start', pb.varint(1, true)),
      param('note', pb.string(3, 'hello')),
      param('ratio', pb.double(4, 0.5)),
      input('INPUT0', 'INT32', [1, 16]),
      input('INPUT1', 'INT32', [1, 16]),
      pb.bytes(7, int32s(range(16, () => 0))),
      pb.bytes(7, int32s(range(16, () => 0))),
    ]);
    await call(client, 'ModelInfer', request);
    const seen = simple.requests[0];
    expect([seen.priority, seen.timeoutUs]).toEqual([1, 2500]);
    expect(seen.parameters).toEqual({ sequence_id: 77, sequence_start: true, note: 'hello', ratio: 0.5 });
  });

  it('runs the asked version', async () => {
    const client = await connect(new FakeRepository([versionedModel('1'), versionedModel('3')]));
    const request = (version?: string): Buffer =>
      Buffer.concat([pb.string(1, 'versioned'), ...(version ? [pb.string(2, version)] : []), input('INPUT0', 'INT32', [1], pb.message(5, pb.packedVarints(2, [5])))]);
    expect(rawBytes(parse(await call(client, 'ModelInfer', request('1'))), 6)).toEqual([int32s([5])]);
    expect(rawBytes(parse(await call(client, 'ModelInfer', request())), 6)).toEqual([int32s([15])]);
    expect(strings(parse(await call(client, 'ModelInfer', request())), 2)).toEqual(['3']);
  });
});

describe('ModelInfer errors', () => {
  const zeros = pb.bytes(7, int32s(range(16, () => 0)));
  const simpleInputs = Buffer.concat([input('INPUT0', 'INT32', [1, 16]), input('INPUT1', 'INT32', [1, 16]), zeros, zeros]);

  it("maps Triton's error kinds onto gRPC codes with the same messages", async () => {
    const notReady = versionedModel('1');
    notReady.isReady = false;
    const decoupled = new FakeModel({ name: 'stream', decoupled: true, inputs: [], outputs: [], compute: () => [] });
    const client = await connect(new FakeRepository([simpleModel(), notReady, decoupled]));
    const cases: [Buffer, status, string][] = [
      [Buffer.concat([pb.string(1, 'ghost'), simpleInputs]), status.NOT_FOUND, "Request for unknown model: 'ghost' is not found"],
      [Buffer.concat([pb.string(1, 'simple'), pb.string(2, '4'), simpleInputs]), status.NOT_FOUND, "Request for unknown model: 'simple' version 4 is not found"],
      [pb.string(1, 'versioned'), status.UNAVAILABLE, "Model 'versioned' version 1 is not ready"],
      [pb.string(1, 'stream'), status.UNIMPLEMENTED, "ModelInfer RPC doesn't support models with decoupled transaction policy"],
      [Buffer.concat([pb.string(1, 'simple'), simpleInputs, pb.message(6, pb.string(1, 'NOPE'))]), status.INVALID_ARGUMENT, "Unexpected inference output 'NOPE' for model 'simple'."],
      [Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16]), zeros]), status.INVALID_ARGUMENT, "Expected input 'INPUT1' for model 'simple' is missing."],
      [
        Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16]), input('INPUT1', 'INT32', [1, 16]), zeros]),
        status.INVALID_ARGUMENT,
        "unable to find data for input tensor 'INPUT1' for model 'simple' in request.",
      ],
      [
        Buffer.concat([pb.string(1, 'simple'), simpleInputs, zeros]),
        status.INVALID_ARGUMENT,
        "Expected 2 raw_input_contents, one per input, got 3 for model 'simple'.",
      ],
      [
        Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16], pb.message(5, pb.packedFloats(6, [1]))), input('INPUT1', 'INT32', [1, 16])]),
        status.INVALID_ARGUMENT,
        "unexpected explicit tensor data for input tensor 'INPUT0' for model 'simple' of type 'FP32', expected datatype 'INT32'",
      ],
      [
        Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16], pb.message(5, pb.packedVarints(2, [1]), pb.packedFloats(6, [1]))), input('INPUT1', 'INT32', [1, 16])]),
        status.INVALID_ARGUMENT,
        "unexpected explicit tensor data for input tensor 'INPUT0' for model 'simple', binary data was already supplied.",
      ],
      [
        Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16], pb.message(5, pb.packedVarints(2, [1]))), input('INPUT1', 'INT32', [1, 16]), zeros, zeros]),
        status.INVALID_ARGUMENT,
        "contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'",
      ],
      [Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16]), input('INPUT1', 'INT32', [1, 16]), pb.bytes(7, Buffer.alloc(3)), zeros]), status.INVALID_ARGUMENT, "Tensor 'INPUT0': binary data is 3 bytes, but shape [1,16] of INT32 needs 64."],
      [Buffer.concat([pb.string(1, 'simple'), pb.mapEntry(4, 'priority', pb.string(3, 'high')), simpleInputs]), status.INVALID_ARGUMENT, 'Priority "high" is out of range: give a non-negative integer (1 = highest, 0 = the default level).'],
    ];
    for (const [request, code, message] of cases) {
      expect(await failure(call(client, 'ModelInfer', request)), message).toEqual([code, message]);
    }
  });

  it('refuses a message over the size limit with RESOURCE_EXHAUSTED', async () => {
    const client = await connect(new FakeRepository([identityModel('UINT8')]), { maxMessageBytes: 1024 });
    const request = Buffer.concat([pb.string(1, 'identity_uint8'), input('INPUT0', 'UINT8', [2048]), pb.bytes(7, Buffer.alloc(2048))]);
    expect((await failure(call(client, 'ModelInfer', request)))[0]).toBe(status.RESOURCE_EXHAUSTED);
  });
});

describe('server faults over gRPC', () => {
  const secret = "ENOENT: no such file or directory, open '/srv/models/secret/1/model.onnx'";
  const broken = (): FakeModel =>
    new FakeModel({ name: 'broken', inputs: [], outputs: [], compute: () => { throw Object.assign(new Error(secret), { cause: new Error('the root cause') }); } });
  const logged = (): { entries: [object, string][]; logger: GrpcFaultLogger } => {
    const entries: [object, string][] = [];
    return { entries, logger: { error: (details, message) => void entries.push([details, message]) } };
  };

  it('answers INTERNAL "Internal Server Error" under serve-fn start, as HTTP, and logs the whole error with its cause', async () => {
    const { entries, logger } = logged();
    const client = await connect(new FakeRepository([broken()]), { logger });
    expect(await failure(call(client, 'ModelInfer', pb.string(1, 'broken')))).toEqual([status.INTERNAL, 'Internal Server Error']);
    expect(entries).toHaveLength(1);
    const [details, message] = entries[0];
    expect(message).toBe('gRPC call failed');
    expect(details).toMatchObject({ method: '/inference.GRPCInferenceService/ModelInfer', err: { message: secret, cause: { message: 'the root cause' } } });
  });

  it('answers generically in a stream error_message too', async () => {
    const { entries, logger } = logged();
    const client = await connect(new FakeRepository([broken()]), { logger });
    const [response] = await exchange(client, inferenceMethod('ModelStreamInfer'), [pb.string(1, 'broken')]);
    expect(strings(parse(response), 1)).toEqual(['Internal Server Error']);
    expect(entries).toHaveLength(1);
  });

  it('shows the message under serve-fn dev, and keeps a client error\'s message in production', async () => {
    const client = await connect(new FakeRepository([broken()]), { exposeErrors: true });
    expect(await failure(call(client, 'ModelInfer', pb.string(1, 'broken')))).toEqual([status.INTERNAL, secret]);
    const { entries, logger } = logged();
    const production = await connect(new FakeRepository([broken()]), { logger });
    expect(await failure(call(production, 'ModelInfer', pb.string(1, 'ghost')))).toEqual([status.NOT_FOUND, "Request for unknown model: 'ghost' is not found"]);
    expect(entries).toEqual([]);
  });
});

describe('ModelStreamInfer', () => {
  it('answers every request on the stream, errors in error_message, then ends', async () => {
    const client = await connect(new FakeRepository([versionedModel('2')]));
    const request = (id: string, model: string, value: number): Buffer =>
      Buffer.concat([pb.string(1, model), pb.string(3, id), input('INPUT0', 'INT32', [1], pb.message(5, pb.packedVarints(2, [value])))]);
    const answers = await exchange(client, inferenceMethod('ModelStreamInfer'), [request('a', 'versioned', 4), request('b', 'ghost', 1), request('c', 'versioned', 10)]);

    const parsed = answers.map((a) => parse(a));
    const ok = parsed.filter((p) => (strings(p, 1)[0] ?? '') === '').map((p) => messages(p, 2)[0]);
    const failed = parsed.filter((p) => (strings(p, 1)[0] ?? '') !== '');
    expect(ok.map((r) => [strings(r, 3)[0], rawBytes(r, 6)[0]]).sort()).toEqual([
      ['a', int32s([8])],
      ['c', int32s([20])],
    ]);
    expect(failed.map((p) => strings(p, 1)[0])).toEqual(["Request for unknown model: 'ghost' is not found"]);
  });

  it('ends at once when the client sends nothing', async () => {
    const client = await connect(new FakeRepository([]));
    const ended = exchange(client, inferenceMethod('ModelStreamInfer'), []).then((answers) => answers.length);
    expect(await ended).toBe(0);
  });
});

describe("every RPC of Triton's GRPCInferenceService", () => {
  const TRITON_RPCS = [
    'ServerLive', 'ServerReady', 'ModelReady', 'ServerMetadata', 'ModelMetadata', 'ModelInfer', 'ModelStreamInfer', 'ModelConfig',
    'ModelStatistics', 'RepositoryIndex', 'RepositoryModelLoad', 'RepositoryModelUnload',
    'SystemSharedMemoryStatus', 'SystemSharedMemoryRegister', 'SystemSharedMemoryUnregister',
    'CudaSharedMemoryStatus', 'CudaSharedMemoryRegister', 'CudaSharedMemoryUnregister', 'TraceSetting', 'LogSettings',
  ];

  it('declares each one, in the order of grpc_service.proto', () => {
    const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, AS_JSON));
    const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
    expect(Object.values(Service.service).map((m) => m.path)).toEqual(TRITON_RPCS.map(inferenceMethod));
  });

  it('answers UNIMPLEMENTED only for the log RPC and CUDA shared-memory registration, whose extensions ServerMetadata does not list', async () => {
    const call = await typedClient(new FakeRepository([]));
    const { extensions } = await call('ServerMetadata');
    for (const extension of ['cuda_shared_memory', 'logging']) expect(extensions).not.toContain(extension);
    for (const method of [...TRITON_RPCS.filter((m) => /Log/.test(m)), 'CudaSharedMemoryRegister']) {
      expect((await failure(call(method)))[0], method).toBe(status.UNIMPLEMENTED);
    }
  });
});

describe('ModelConfig', () => {
  it("answers Triton's ModelConfig message with the JSON HTTP's /config route answers", async () => {
    const repository = new FakeRepository([simpleModel(), versionedModel('1'), versionedModel('2')]);
    const call = await typedClient(repository);
    const { app } = await protocolApp(repository);
    for (const [name, version] of [['simple', ''], ['versioned', '1'], ['versioned', '']]) {
      const http = await app.inject({ url: `/v2/models/${name}${version ? `/versions/${version}` : ''}/config` });
      expect((await call('ModelConfig', { name, version })).config).toEqual(http.json());
    }
    expect((await call('ModelConfig', { name: 'simple' })).config).toMatchObject({ max_batch_size: 8, input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }, { name: 'INPUT1' }] });
  });

  it('is NOT_FOUND for an unknown model or version, with the HTTP message', async () => {
    const call = await typedClient(new FakeRepository([versionedModel('1')]));
    expect(await failure(call('ModelConfig', { name: 'ghost' }))).toEqual([status.NOT_FOUND, "Request for unknown model: 'ghost' is not found"]);
    expect(await failure(call('ModelConfig', { name: 'versioned', version: '7' }))).toEqual([status.NOT_FOUND, "Request for unknown model: 'versioned' version 7 is not found"]);
  });
});

describe('ModelStatistics', () => {
  it("answers the statistics HTTP's /stats routes answer: every model, one model, one version", async () => {
    const recorder = new InferenceRecorder({ collectProcessMetrics: false, now: () => 1_700_000_000_000 });
    const repository = new FakeRepository([simpleModel(recorder), versionedModel('1'), versionedModel('2')]);
    const call = await typedClient(repository, { recorder, decode: { ...AS_JSON, defaults: true } });
    const { app } = await protocolApp(repository, { recorder });
    const zeros = Buffer.alloc(64);
    const infer = await connect(repository, { recorder });
    await rawCallInfer(infer, Buffer.concat([pb.string(1, 'simple'), input('INPUT0', 'INT32', [1, 16]), input('INPUT1', 'INT32', [1, 16]), pb.bytes(7, zeros), pb.bytes(7, zeros)]));
    const cases: [{ name?: string; version?: string }, string][] = [
      [{}, '/v2/models/stats'],
      [{ name: 'simple' }, '/v2/models/simple/stats'],
      [{ name: 'versioned' }, '/v2/models/versioned/stats'],
      [{ name: 'versioned', version: '2' }, '/v2/models/versioned/versions/2/stats'],
    ];
    for (const [request, url] of cases) {
      expect(await call('ModelStatistics', request), url).toEqual((await app.inject({ url })).json());
    }
    const [simple] = (await call('ModelStatistics', { name: 'simple' })).model_stats as { inference_count: number; last_inference: number }[];
    expect([simple.inference_count, simple.last_inference]).toEqual([1, 1_700_000_000_000]);
    expect(await failure(call('ModelStatistics', { name: 'ghost' }))).toEqual([status.NOT_FOUND, "Request for unknown model: 'ghost' is not found"]);
  });
});

/** A ModelInfer call with hand-encoded bytes, for tests that only need it to have run. */
function rawCallInfer(client: Client, request: Buffer): Promise<Buffer> {
  return call(client, 'ModelInfer', request);
}

describe('model repository RPCs', () => {
  const explicit = (): FakeRepository => new FakeRepository([simpleModel()], { controlMode: 'explicit', unloaded: [versionedModel('1')] });

  it("RepositoryIndex answers HTTP's index, all or ready only", async () => {
    const repository = explicit();
    const call = await typedClient(repository);
    const { app } = await protocolApp(repository);
    for (const ready of [false, true]) {
      const http = await app.inject({ method: 'POST', url: '/v2/repository/index', payload: JSON.stringify({ ready }) });
      expect((await call('RepositoryIndex', { ready })).models).toEqual(http.json());
    }
  });

  it('RepositoryModelLoad reads config as string_param and files as bytes_param, then serves the model', async () => {
    const repository = explicit();
    const call = await typedClient(repository);
    const onnx = Buffer.from([0x08, 0x07, 0x00, 0xff]);
    await call('RepositoryModelLoad', {
      model_name: 'versioned',
      parameters: { config: { string_param: '{"max_batch_size": 0}' }, 'file:1/model.onnx': { bytes_param: onnx } },
    });
    expect(repository.loads).toEqual([{ name: 'versioned', request: { config: '{"max_batch_size": 0}', files: { 'file:1/model.onnx': new Uint8Array(onnx) } } }]);
    expect((await call('ModelReady', { name: 'versioned' })).ready).toBe(true);
    await call('RepositoryModelUnload', { model_name: 'versioned', parameters: { unload_dependents: { bool_param: false } } });
    expect((await call('ModelReady', { name: 'versioned' })).ready).toBe(false);
  });

  it("refuses as Triton does: wrong parameter types, a repository name, dependents, and any load or unload outside explicit mode", async () => {
    const call = await typedClient(explicit());
    const cases: [string, object, status, string][] = [
      ['RepositoryModelLoad', { model_name: 'versioned', parameters: { config: { bytes_param: Buffer.from('{}') } } }, status.INVALID_ARGUMENT, "invalid value type for load parameter 'config', expected string_param."],
      ['RepositoryModelLoad', { model_name: 'versioned', parameters: { 'file:1/model.onnx': { string_param: 'AAAA' } } }, status.INVALID_ARGUMENT, "invalid value type for load parameter 'file:1/model.onnx', expected bytes_param."],
      ['RepositoryModelLoad', { model_name: 'versioned', parameters: { other: { string_param: 'x' } } }, status.INVALID_ARGUMENT, "Unexpected load parameter 'other': use 'config' or 'file:<version>/<file name>'."],
      ['RepositoryModelLoad', { model_name: 'ghost' }, status.NOT_FOUND, "Request for unknown model: 'ghost' is not found"],
      ['RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { string_param: 'yes' } } }, status.INVALID_ARGUMENT, "invalid value type for 'unload_dependents' parameter, expected bool_param."],
      ['RepositoryModelUnload', { model_name: 'simple', parameters: { unload_dependents: { bool_param: true } } }, status.UNIMPLEMENTED, "'unload_dependents' is not supported: unload the dependent models one by one"],
      ['RepositoryIndex', { repository_name: 'models' }, status.UNIMPLEMENTED, "'repository_name' specification is not supported"],
      ['RepositoryModelLoad', { repository_name: 'models', model_name: 'versioned' }, status.UNIMPLEMENTED, "'repository_name' specification is not supported"],
      ['RepositoryModelUnload', { repository_name: 'models', model_name: 'simple' }, status.UNIMPLEMENTED, "'repository_name' specification is not supported"],
    ];
    for (const [method, request, code, message] of cases) expect(await failure(call(method, request)), message).toEqual([code, message]);
    const polling = await typedClient(new FakeRepository([simpleModel()]));
    for (const method of ['RepositoryModelLoad', 'RepositoryModelUnload']) {
      expect(await failure(polling(method, { model_name: 'simple' }))).toEqual([status.UNAVAILABLE, 'explicit model load / unload is not allowed if polling is enabled']);
    }
    expect(((await polling('RepositoryIndex')).models as unknown[]).length).toBe(1);
  });
});

describe('TraceSetting', () => {
  it("reads and changes Triton's trace settings, globally and per model, as HTTP's /v2/trace/setting", async () => {
    const call = await typedClient(new FakeRepository([simpleModel()]), { traceSettings: new TraceSettings(true) });
    const values = (res: Record<string, unknown>) => Object.fromEntries(Object.entries(res.settings as Record<string, { value: string[] }>).map(([k, v]) => [k, v.value]));
    expect((await call('ServerMetadata')).extensions).toContain('trace');
    expect(values(await call('TraceSetting', {}))).toEqual({ trace_level: ['TIMESTAMPS'], trace_rate: ['1'], trace_count: ['-1'], log_frequency: ['0'], trace_file: [''], trace_mode: ['opentelemetry'] });
    const changed = values(await call('TraceSetting', { model_name: 'simple', settings: { trace_level: { value: ['OFF'] }, trace_rate: { value: ['10'] } } }));
    expect(changed).toMatchObject({ trace_level: ['OFF'], trace_rate: ['10'] });
    expect(values(await call('TraceSetting', { model_name: 'simple' }))).toMatchObject({ trace_level: ['OFF'] });
    expect(values(await call('TraceSetting', {}))).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_rate: ['1'] });
    // A setting with no value goes back to the global one.
    expect(values(await call('TraceSetting', { model_name: 'simple', settings: { trace_level: {} } }))).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_rate: ['10'] });
  });

  it('refuses values it cannot honour with INVALID_ARGUMENT, and an unknown model with NOT_FOUND', async () => {
    const call = await typedClient(new FakeRepository([simpleModel()]), { traceSettings: new TraceSettings(true) });
    const [code, details] = await failure(call('TraceSetting', { settings: { trace_level: { value: ['TENSORS'] } } }));
    expect(code).toBe(status.INVALID_ARGUMENT);
    expect(details).toContain("trace setting 'trace_level'");
    expect((await failure(call('TraceSetting', { settings: { trace_rate: { value: ['0'] } } })))[0]).toBe(status.INVALID_ARGUMENT);
    expect((await failure(call('TraceSetting', { model_name: 'nope', settings: {} })))[0]).toBe(status.NOT_FOUND);
  });
});
