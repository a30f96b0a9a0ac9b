import { ResponderBuilder, ServerInterceptingCall, ServerListenerBuilder, status, type ServerInterceptor } from '@grpc/grpc-js';
import type { Span } from '@opentelemetry/api';
import type { RequestTracing } from './request-tracing.js';

/** The codes the RPC semantic conventions call a server span's error (https://opentelemetry.io/docs/specs/semconv/rpc/grpc/). */
const SERVER_ERRORS: ReadonlySet<number> = new Set([status.UNKNOWN, status.DEADLINE_EXCEEDED, status.UNIMPLEMENTED, status.INTERNAL, status.UNAVAILABLE, status.DATA_LOSS]);

/**
 * One SERVER span per gRPC call, named `inference.GRPCInferenceService/ModelInfer` as the RPC
 * semantic conventions name it, child of the W3C `traceparent` the client sends in its metadata.
 */
export function grpcTracingInterceptor(tracing: RequestTracing): ServerInterceptor {
  return (method, call) => {
    let span: Span | undefined;
    const [service, rpc] = method.path.slice(1).split('/');
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        const text = (key: string): string | undefined => metadata.get(key).find((v): v is string => typeof v === 'string');
        span = tracing.startRequestSpan(method.path.slice(1), { traceparent: text('traceparent'), tracestate: text('tracestate') }, {
          'rpc.system': 'grpc',
          'rpc.service': service ?? '',
          'rpc.method': rpc ?? '',
        });
        // The handler's model spans go under this span: it reads its context where the caller's was.
        metadata.set('traceparent', tracing.traceOf(span).traceparent);
        next(metadata);
      })
      .build();
    const responder = new ResponderBuilder()
      .withStart((next) => next(listener))
      .withSendStatus((sent, next) => {
        span?.setAttribute('rpc.grpc.status_code', sent.code);
        // SpanStatusCode.ERROR is 2 (https://opentelemetry.io/docs/specs/otel/trace/api/#set-status).
        if (SERVER_ERRORS.has(sent.code)) span?.setStatus({ code: 2 });
        span?.end();
        next(sent);
      })
      .build();
    return new ServerInterceptingCall(call, responder);
  };
}
