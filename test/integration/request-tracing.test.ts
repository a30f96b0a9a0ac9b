import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
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

    expect(receiver.paths).toEqual(['POST /v1/traces application/json']);
    const [resourceSpans] = receiver.exports[0]!.resourceSpans;
    expect(resourceSpans!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'traced-service' } });
    const spans = resourceSpans!.scopeSpans.flatMap((s) => s.spans);
    expect(spans).toHaveLength(1);
    const [span] = spans;
    expect(span).toMatchObject({ traceId, parentSpanId: parentId, name: 'POST /traced/:word', kind: 2 });
    const attributes = Object.fromEntries(span!.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/traced/:word', 'url.path': '/traced/hello', 'http.response.status_code': 200 });
  });
});
