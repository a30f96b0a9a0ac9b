import type { Attributes, Link, Span, SpanContext, Tracer } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * OpenTelemetry tracing of the server's requests, on only where the standard variables ask for an
 * OTLP export (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/):
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set, `OTEL_SDK_DISABLED`
 * not `true` and `OTEL_TRACES_EXPORTER` not `none`. Off, nothing of the SDK is loaded and no hook
 * is installed: the hot path has no tracing code at all.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/**
 * A span of a request that work done for it hangs under. The runtime records its parts afterwards
 * from the times it keeps anyway (RequestClock), so it needs no SDK and costs nothing when off.
 */
export interface RequestTrace {
  /** A finished child span from `startMs` to `endMs` (ms since the epoch, as RequestClock's). */
  child(name: string, startMs: number, endMs: number, attributes?: Attributes): RequestTrace;
  /**
   * A child span that is still running: its context exists before it ends, so work it causes (a
   * ctx.infer call from the instance) can hang under it. `links` join it to spans of other traces.
   */
  start(name: string, startMs: number, attributes?: Attributes, links?: readonly RequestTrace[]): RunningSpan;
  /**
   * A span that begins a trace of its own, linked to `links`: OpenTelemetry's model of fan-in
   * (https://opentelemetry.io/docs/specs/otel/overview/#links-between-spans), used for the batch that
   * runs several requests at once, each of them in its own trace.
   */
  startLinked(name: string, startMs: number, attributes: Attributes, links: readonly RequestTrace[]): RunningSpan;
  /** This span as a W3C `traceparent`, the form its context crosses the worker boundary in. */
  readonly traceparent: string;
}

/** A started span; `end` ends it, with `failed` marking it as an error. */
export interface RunningSpan {
  readonly trace: RequestTrace;
  end(endMs: number, failed?: boolean): void;
}

/** A started tracer and what ends it; the server that is handed it shuts it down on close (flushing its spans). */
export interface RequestTracing {
  readonly tracer: Tracer;
  /** Reads W3C `traceparent`/`tracestate` from a request's headers into a span's parent. */
  startRequestSpan(name: string, headers: Readonly<Record<string, string | string[] | undefined>>, attributes: Record<string, string>): Span;
  /** `span` as the parent of the spans the runtime records for its request. */
  traceOf(span: Span): RequestTrace;
  /** The span a W3C `traceparent` names (one from an instance's ctx.infer) as a parent; undefined when it does not parse. */
  traceOfParent(traceparent: string): RequestTrace | undefined;
  shutdown(): Promise<void>;
}

/**
 * Loads the SDK (only now: it is ~1 MB of modules a server without tracing never needs) and starts
 * a tracer exporting OTLP/HTTP JSON to the endpoint the variables name. The sampler follows
 * `OTEL_TRACES_SAMPLER`/`_ARG` (the SDK reads them; parent-based always-on by default), the
 * service name `OTEL_SERVICE_NAME` (default `serve-fn`).
 */
export async function startTracing(env: NodeJS.ProcessEnv, serviceVersion: string): Promise<RequestTracing> {
  const [api, core, sdk, exporterModule, resources, semconv] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  // The spec's rule: the signal's own endpoint is used as it is; the general one gets /v1/traces.
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').replace(/\/+$/, '')}/v1/traces`;
  const resource = resources.defaultResource().merge(
    resources.resourceFromAttributes({
      [semconv.ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME || 'serve-fn',
      [semconv.ATTR_SERVICE_VERSION]: serviceVersion,
    }),
  );
  const provider = new sdk.BasicTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(new exporterModule.OTLPTraceExporter({ url }))],
  });
  const tracer = provider.getTracer('serve-fn', serviceVersion);
  const propagator = new core.W3CTraceContextPropagator();
  return {
    tracer,
    startRequestSpan: (name, headers, attributes) => {
      const parent = propagator.extract(api.ROOT_CONTEXT, headers, api.defaultTextMapGetter);
      return tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes }, parent);
    },
    traceOf,
    traceOfParent: (traceparent) => {
      const parent = propagator.extract(api.ROOT_CONTEXT, { traceparent }, api.defaultTextMapGetter);
      const context = api.trace.getSpanContext(parent);
      return context && api.isSpanContextValid(context) ? traceOf(api.trace.wrapSpanContext(context)) : undefined;
    },
    shutdown: () => provider.shutdown(),
  };

  function traceOf(span: Span): RequestTrace {
    const parent = api.trace.setSpan(api.ROOT_CONTEXT, span);
    const running = (started: Span): RunningSpan => ({
      trace: traceOf(started),
      end: (endMs, failed) => {
        // SpanStatusCode.ERROR is 2 (https://opentelemetry.io/docs/specs/otel/trace/api/#set-status).
        if (failed) started.setStatus({ code: 2 });
        started.end(endMs);
      },
    });
    const linksTo = (traces: readonly RequestTrace[] = []): Link[] => traces.map((t) => ({ context: spanContexts.get(t)! }));
    const trace: RequestTrace = {
      child: (name, startMs, endMs, attributes) => {
        const child = tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, startTime: startMs, attributes }, parent);
        child.end(endMs);
        return traceOf(child);
      },
      start: (name, startMs, attributes, links) => running(tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, startTime: startMs, attributes, links: linksTo(links) }, parent)),
      startLinked: (name, startMs, attributes, links) => running(tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, startTime: startMs, attributes, links: linksTo(links), root: true })),
      get traceparent() {
        const context = span.spanContext();
        return `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`;
      },
    };
    spanContexts.set(trace, span.spanContext());
    return trace;
  }
}

/** The span context behind each RequestTrace, for links between them. */
const spanContexts = new WeakMap<RequestTrace, SpanContext>();

const spans = new WeakMap<FastifyRequest, { span?: Span; readonly trace: RequestTrace }>();

/** The trace of an HTTP request, for the work done on its behalf; undefined when tracing is off. */
export function requestTrace(request: FastifyRequest): RequestTrace | undefined {
  return spans.get(request)?.trace;
}

/**
 * One SERVER span per HTTP request, named `METHOD route` with the HTTP semantic conventions'
 * attributes (https://opentelemetry.io/docs/specs/semconv/http/http-spans/), child of the caller's
 * `traceparent` when it sends one; a 5xx marks it as an error, a 4xx does not (the server's spans).
 */
export function installRequestTracing(app: FastifyInstance, tracing: RequestTracing): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    const span = tracing.startRequestSpan(route ? `${request.method} ${route}` : request.method, request.headers, {
      'http.request.method': request.method,
      'url.path': request.url.split('?', 1)[0]!,
      ...(route ? { 'http.route': route } : {}),
    });
    spans.set(request, { span, trace: tracing.traceOf(span) });
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    endRequestSpan(request, reply.statusCode);
    done();
  });
}

/**
 * Ends a WebSocket upgrade's span at its 101: an upgraded request never reaches onResponse. The
 * session's span (InstanceEngine.openSocket) stays open under it until the connection closes.
 */
export function requestUpgraded(request: FastifyRequest): void {
  endRequestSpan(request, 101);
}

function endRequestSpan(request: FastifyRequest, statusCode: number): void {
  const entry = spans.get(request);
  const span = entry?.span;
  if (!span) return;
  entry.span = undefined;
  span.setAttribute('http.response.status_code', statusCode);
  // SpanStatusCode.ERROR is 2 (https://opentelemetry.io/docs/specs/otel/trace/api/#set-status).
  if (statusCode >= 500) span.setStatus({ code: 2 });
  span.end();
}
