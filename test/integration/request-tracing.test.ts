import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { startGrpcServer } from '../../src/protocol/grpc/grpc-server.js';
import { FakeRepository } from '../protocol/fake-repository.js';
import { call } from '../protocol/grpc-raw.js';
import { Endpoint, Instances, Model, ServeFnServer, WebSocketEndpoint } from '../../src/index.js';
import { startTracing, tracingRequested } from '../../src/tracing/request-tracing.js';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { GRPC_PROTO_PATH } from '../../src/protocol/grpc/grpc-server.js';
import { range, scratchFolder, SIMPLE_CONFIG, writeFiles } from '../fixtures/repository/repository-files.js';
import { writeBertEncoder } from '../fixtures/text/text-model-folders.js';
import { join } from 'node:path';

@Model({ name: 'traced' })
@Instances(1, { inline: true })
class Traced {
  @Endpoint('/traced/:word')
  echo(): { ok: boolean } {
    return { ok: true };
  }
}

@Model({ name: 'ticker' })
@Instances(1, { inline: true })
class Ticker {
  /** Three chunks 60 ms apart: the stream's span must last past the first. */
  @Endpoint('/ticks', { stream: 'ndjson' })
  async *ticks(): AsyncGenerator<{ n: number }> {
    for (let n = 0; n < 3; n++) {
      if (n > 0) await sleep(60);
      yield { n };
    }
  }
}

@Model({ name: 'chat' })
@Instances(1, { inline: true })
class Chat {
  @WebSocketEndpoint('/ws/chat')
  async *chat(messages: AsyncIterable<unknown>): AsyncGenerator<unknown> {
    for await (const message of messages) yield message;
  }
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  links?: { traceId: string; spanId: string }[];
  attributes: { key: string; value: Record<string, unknown> }[];
}

interface OtlpExport {
  resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

/** A local OTLP/HTTP receiver: collects the JSON exports POSTed to /v1/traces. */
async function otlpReceiver(): Promise<{ server: Server; url: string; exports: OtlpExport[]; paths: string[] }> {
  const exports: OtlpExport[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      exports.push(JSON.parse(Buffer.concat(chunks).toString()) as OtlpExport);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports, paths };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe('request tracing', () => {
  it('is on only when the standard variables ask for an OTLP export', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'x' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });

  it("exports a request's SERVER span by OTLP, child of the caller's traceparent, with the HTTP attributes", async () => {
    const receiver = await otlpReceiver();
    closers.push(() => new Promise((resolve) => receiver.server.close(resolve)));
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`, OTEL_SERVICE_NAME: 'traced-service' }, '9.9.9');
    const server = new ServeFnServer({ models: [Traced], logger: false, collectProcessMetrics: false, tracing });
    await server.start();

    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentId = '00f067aa0ba902b7';
    const res = await server.app.inject({ method: 'POST', url: '/traced/hello?x=1', payload: {}, headers: { traceparent: `00-${traceId}-${parentId}-01` } });
    expect(res.statusCode).toBe(200);
    await server.close();

    expect(new Set(receiver.paths)).toEqual(new Set(['POST /v1/traces application/json']));
    const resourceSpans = receiver.exports.flatMap((e) => e.resourceSpans);
    expect(resourceSpans[0]!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'traced-service' } });
    const spans = resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    const span = spans.find((s) => s.name === 'POST /traced/:word');
    expect(span).toMatchObject({ traceId, parentSpanId: parentId, kind: 2 });
    // The span tree: the request, its queue wait and its execution, the model's run inside that.
    const named = (name: string): OtlpSpan => spans.find((s) => s.name === name)!;
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /traced/:word', 'batch', 'compute', 'compute_infer', 'queue']);
    // The batch runs in a trace of its own, which the request's compute span links to (fan-in).
    expect(spans.filter((s) => s.name !== 'batch').every((s) => s.traceId === traceId)).toBe(true);
    expect(named('compute').links).toEqual([expect.objectContaining({ traceId: named('batch').traceId, spanId: named('batch').spanId })]);
    expect(named('queue').parentSpanId).toBe(span!.spanId);
    expect(named('compute').parentSpanId).toBe(span!.spanId);
    expect(named('compute_infer').parentSpanId).toBe(named('compute').spanId);
    expect(named('compute').attributes).toContainEqual({ key: 'serve_fn.model', value: { stringValue: 'traced' } });
    const attributes = Object.fromEntries(span!.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/traced/:word', 'url.path': '/traced/hello', 'http.response.status_code': 200 });
  });

  it("exports a gRPC call's SERVER span, child of the traceparent in the call's metadata", async () => {
    const receiver = await otlpReceiver();
    closers.push(() => new Promise((resolve) => receiver.server.close(resolve)));
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces` }, '9.9.9');
    const grpc = await startGrpcServer({
      repository: new FakeRepository([]), serverName: 'serve-fn', serverVersion: '9.9.9', recorder: new InferenceRecorder({ collectProcessMetrics: false }),
      ready: () => true, port: 0, host: '127.0.0.1', tracing,
    });
    const client = new Client(`127.0.0.1:${grpc.port}`, credentials.createInsecure());
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const parentId = 'b7ad6b7169203331';
    const metadata = new Metadata();
    metadata.set('traceparent', `00-${traceId}-${parentId}-01`);
    await call(client, 'ServerLive', Buffer.alloc(0), metadata);
    client.close();
    await grpc.close(100);
    await tracing.shutdown();

    const spans = receiver.exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
    expect(spans).toHaveLength(1);
    expect(spans[0]).toMatchObject({ traceId, parentSpanId: parentId, name: 'inference.GRPCInferenceService/ServerLive', kind: 2 });
    const attributes = Object.fromEntries(spans[0]!.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'ServerLive', 'rpc.grpc.status_code': 0 });
  });
});

const SPANS_OF = (receiver: { exports: OtlpExport[] }): OtlpSpan[] => receiver.exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
const attributesOf = (span: OtlpSpan): Record<string, unknown> => Object.fromEntries(span.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
const durationMs = (span: OtlpSpan): number => Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6;

const reexport = (fixture: string): string => `export { default } from '${new URL(`../fixtures/repository/${fixture}`, import.meta.url).href}';\n`;
const root = scratchFolder('tracing-it');
writeFiles(root, {
  'simple/config.pbtxt': SIMPLE_CONFIG,
  'simple/1/model.onnx': buildAddSubModel({ size: 16 }),
  // BLS in a worker thread: calls `simple` with ctx.infer for each request.
  'doubler/config.pbtxt': 'max_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]\noutput [ { name: "DOUBLED" data_type: TYPE_INT32 dims: [ 16 ] } ]',
  'doubler/1/model.ts': reexport('doubler-model.ts'),
});

const addSubBody = { inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], data: range(16) })) };

describe("the model's spans", () => {
  async function tracedServer(grpc = false): Promise<{ server: ServeFnServer; receiver: Awaited<ReturnType<typeof otlpReceiver>> }> {
    const receiver = await otlpReceiver();
    closers.push(() => new Promise((resolve) => receiver.server.close(resolve)));
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, '9.9.9');
    const server = new ServeFnServer({
      models: [Ticker, Chat], logger: false, collectProcessMetrics: false, tracing,
      repository: { root, controlMode: 'explicit', startupModels: ['simple', 'doubler'] },
      ...(grpc ? { grpc: { port: 0, host: '127.0.0.1' } } : {}),
    });
    if (grpc) await server.listen(0, '127.0.0.1');
    else await server.start();
    return { server, receiver };
  }

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** The request's queue and compute spans, compute_infer under compute, and the batch its compute links to. */
  function expectModelSpans(spans: OtlpSpan[], request: OtlpSpan, model: string): void {
    const children = spans.filter((s) => s.parentSpanId === request.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['compute', 'queue']);
    const compute = children.find((s) => s.name === 'compute')!;
    expect(attributesOf(compute)).toMatchObject({ 'serve_fn.model': model, 'serve_fn.model_version': '1' });
    expect(spans.filter((s) => s.parentSpanId === compute.spanId).map((s) => s.name)).toContain('compute_infer');
    const batch = spans.find((s) => s.name === 'batch' && compute.links?.some((l) => l.spanId === s.spanId));
    expect(batch, 'the batch span the compute span links to').toBeDefined();
    expect(batch!.traceId).not.toBe(request.traceId);
    expect(batch!.parentSpanId ?? '').toBe('');
    expect(attributesOf(batch!)).toMatchObject({ 'serve_fn.model': model, 'serve_fn.batch_size': 1 });
  }

  it('traces a KServe v2 HTTP infer of a repository model: queue, compute and its batch under the request', async () => {
    const { server, receiver } = await tracedServer();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/simple/infer', payload: addSubBody, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    expect(res.statusCode).toBe(200);
    await server.close();
    const spans = SPANS_OF(receiver);
    const request = spans.find((s) => s.name === 'POST /v2/models/:model/infer')!;
    expect(request).toMatchObject({ traceId, parentSpanId: '00f067aa0ba902b7' });
    expectModelSpans(spans, request, 'simple');
  });

  it('traces a gRPC ModelInfer the same way, under the call span', async () => {
    const { server, receiver } = await tracedServer(true);
    const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, { keepCase: true, longs: Number, enums: String, defaults: false }));
    const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
    const client = new Service(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const metadata = new Metadata();
    metadata.set('traceparent', `00-${traceId}-b7ad6b7169203331-01`);
    const inputs = ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], contents: { int_contents: range(16) } }));
    await new Promise((resolve, reject) => client.ModelInfer({ model_name: 'simple', inputs }, metadata, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))));
    client.close();
    await server.close();
    const spans = SPANS_OF(receiver);
    const rpc = spans.find((s) => s.name === 'inference.GRPCInferenceService/ModelInfer')!;
    expect(rpc).toMatchObject({ traceId, parentSpanId: 'b7ad6b7169203331', kind: 2 });
    expectModelSpans(spans, rpc, 'simple');
  });

  it("puts a ctx.infer call's spans under the caller's compute span, across the worker boundary", async () => {
    const { server, receiver } = await tracedServer();
    const payload = { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: range(16) }] };
    const res = await server.app.inject({ method: 'POST', url: '/v2/models/doubler/infer', payload });
    expect(res.statusCode).toBe(200);
    await server.close();
    const spans = SPANS_OF(receiver);
    const request = spans.find((s) => s.name === 'POST /v2/models/:model/infer')!;
    expectModelSpans(spans, request, 'doubler');
    const callerCompute = spans.find((s) => s.name === 'compute' && s.parentSpanId === request.spanId)!;
    const calleeSpans = spans.filter((s) => s.parentSpanId === callerCompute.spanId && s.name !== 'compute_infer');
    expect(calleeSpans.map((s) => s.name).sort()).toEqual(['compute', 'queue']);
    expect(calleeSpans.every((s) => s.traceId === request.traceId && attributesOf(s)['serve_fn.model'] === 'simple')).toBe(true);
  });

  it('gives a stream one span for its run, ended when the stream ends, after its queue span', async () => {
    const { server, receiver } = await tracedServer();
    const res = await server.app.inject({ method: 'POST', url: '/ticks', payload: {} });
    expect(res.body.trim().split('\n')).toHaveLength(3);
    await server.close();
    const spans = SPANS_OF(receiver);
    const request = spans.find((s) => s.name === 'POST /ticks')!;
    const children = spans.filter((s) => s.parentSpanId === request.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['queue', 'stream']);
    const stream = children.find((s) => s.name === 'stream')!;
    expect(attributesOf(stream)).toMatchObject({ 'serve_fn.model': 'ticker' });
    // Two 60 ms waits between chunks: a span ended at the first chunk would be far shorter.
    expect(durationMs(stream)).toBeGreaterThanOrEqual(100);
  });

  it('gives a WebSocket session one span, open to close, under the upgrade request', async () => {
    const { server, receiver } = await tracedServer();
    const ws = await server.app.injectWS('/ws/chat');
    const echoed = new Promise<string>((resolve) => ws.once('message', (data: Buffer) => resolve(data.toString())));
    ws.send(JSON.stringify({ hi: 1 }));
    expect(JSON.parse(await echoed)).toEqual({ hi: 1 });
    await sleep(60);
    const closed = new Promise((resolve) => ws.once('close', resolve));
    ws.close();
    await closed;
    await server.close();
    const spans = SPANS_OF(receiver);
    const request = spans.find((s) => s.name === 'GET /ws/chat')!;
    expect(attributesOf(request)).toMatchObject({ 'http.response.status_code': 101 });
    const session = spans.find((s) => s.name === 'session')!;
    expect(session).toMatchObject({ traceId: request.traceId, parentSpanId: request.spanId });
    expect(attributesOf(session)).toMatchObject({ 'serve_fn.model': 'chat', 'serve_fn.instance': 0 });
    expect(durationMs(session)).toBeGreaterThanOrEqual(50);
  });

  it("turns a model's spans off with Triton's trace_level OFF, and keeps the request's own span", async () => {
    const { server, receiver } = await tracedServer();
    const off = await server.app.inject({ method: 'POST', url: '/v2/models/simple/trace/setting', payload: { trace_level: ['OFF'] } });
    expect(off.json()).toMatchObject({ trace_level: ['OFF'] });
    expect((await server.app.inject({ method: 'POST', url: '/v2/models/simple/infer', payload: addSubBody })).statusCode).toBe(200);
    await server.close();
    const names = SPANS_OF(receiver).map((s) => s.name);
    expect(names).toContain('POST /v2/models/:model/infer');
    expect(names).not.toContain('queue');
    expect(names).not.toContain('compute');
  });
});

describe("a text model's spans", () => {
  const textRoot = scratchFolder('tracing-text-it');
  afterAll(() => rmSync(textRoot, { recursive: true, force: true }));

  it('traces an embeddings request: tokenize, then one queue and one compute span over its forward batches', async () => {
    writeBertEncoder(join(textRoot, 'bge-tiny'), { pooling: 'mean', normalize: true });
    const receiver = await otlpReceiver();
    closers.push(() => new Promise((resolve) => receiver.server.close(resolve)));
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, '9.9.9');
    // One row per forward batch: the request's three inputs run in three batches.
    const server = new ServeFnServer({ models: [], logger: false, collectProcessMetrics: false, tracing, textFolders: [join(textRoot, 'bge-tiny')], text: { limits: { maxBatchRequests: 1 } } });
    await server.start();
    const res = await server.app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'bge-tiny', input: ['hello world', 'a cat', 'the quick brown fox'] } });
    expect(res.statusCode).toBe(200);
    await server.close();

    const spans = receiver.exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
    const request = spans.find((s) => s.name === 'POST /v1/embeddings')!;
    expect(request).toBeDefined();
    const children = spans.filter((s) => s.parentSpanId === request.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['compute', 'queue', 'tokenize']);
    const named = (name: string): OtlpSpan => children.find((s) => s.name === name)!;
    const model = { 'serve_fn.model': 'bge-tiny', 'serve_fn.model_version': '1' };
    expect(attributesOf(named('tokenize'))).toMatchObject({ ...model, 'serve_fn.inputs': 3, 'serve_fn.tokens': res.json().usage.prompt_tokens });
    expect(attributesOf(named('queue'))).toMatchObject(model);
    expect(attributesOf(named('compute'))).toMatchObject(model);
    // The compute span covers the request's sequences: it links to each forward batch they ran in.
    const batches = spans.filter((s) => s.name === 'batch');
    expect(batches).toHaveLength(3);
    expect(named('compute').links?.map((l) => l.spanId).sort()).toEqual(batches.map((b) => b.spanId).sort());
    expect(batches.every((b) => b.traceId !== request.traceId)).toBe(true);
    expect(spans.filter((s) => s.parentSpanId === named('compute').spanId).map((s) => s.name)).toEqual(['compute_infer', 'compute_infer', 'compute_infer']);
  });
});
