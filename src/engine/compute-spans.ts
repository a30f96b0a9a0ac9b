import type { Attributes } from '@opentelemetry/api';
import type { RunningSpan } from '../tracing/request-tracing.js';
import type { CallTraces } from '../wire/wire-format.js';
import type { RequestClock } from './request-accounting.js';

/**
 * At dispatch, for the traced requests of a batch: a `batch` span for the batch's run, in a trace
 * of its own, and each request's `compute` span, linked to it. Links, not parenthood, as
 * OpenTelemetry models fan-in (https://opentelemetry.io/docs/specs/otel/overview/#links-between-spans):
 * a batch serves requests of several traces. The compute spans start now, so their context can go
 * with the call to the instance (traceparentsOf) before they end. The caller ends the batch span.
 */
export function startComputeSpans(batch: readonly RequestClock[], sentMs: number, spanAttributes: () => Attributes): RunningSpan | undefined {
  // Untraced batches (every batch while tracing is off) allocate nothing here.
  if (!batch.some((queued) => queued.trace)) return undefined;
  const traced = batch.filter((queued) => queued.trace);
  const attributes = spanAttributes();
  // A request's sequences may share the batch: one link to each request.
  const traces = [...new Set(traced.map((queued) => queued.trace!))];
  const batchSpan = traces[0].startLinked('batch', sentMs, { ...attributes, 'serve_fn.batch_size': batch.length }, traces);
  for (const queued of traced) {
    if (queued.sharesCompute) queued.batch = batchSpan.trace;
    else queued.compute = queued.trace!.start('compute', sentMs, attributes, [batchSpan.trace]);
  }
  return batchSpan;
}

/** The traceparents of a call's requests' compute spans (see CallTraces); none when no request is traced. */
export function traceparentsOf(batch: readonly RequestClock[]): CallTraces | undefined {
  return batch.some((queued) => queued.compute) ? batch.map((queued) => queued.compute?.trace.traceparent) : undefined;
}
