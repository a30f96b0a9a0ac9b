import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { startGrpcServer } from '../../src/protocol/grpc/grpc-server.js';
import { FakeRepository } from '../protocol/fake-repository.js';
import { call } from '../protocol/grpc-raw.js';
import { Endpoint, Instances, Model, ServeFnServer } from '../../src/index.js';
import { startTracing, tracingRequested } from '../../src/tracing/request-tracing.js';

@Model({ name: 'traced' })
@Instances(1, { inline: true })
class Traced {
  @Endpoint('/traced/:word')
  echo(): { ok: boolean } {
    return { ok: true };
  }
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
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
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /traced/:word', 'compute', 'compute_infer', 'queue']);
    expect(spans.every((s) => s.traceId === traceId)).toBe(true);
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
