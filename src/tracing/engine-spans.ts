import type { Attributes } from '@opentelemetry/api';
import { now } from '../wire/epoch-time.js';
import type { RequestTrace, RunningSpan } from './request-tracing.js';

/**
 * The times the engine keeps of a queued request (RequestClock, src/engine/request-accounting.ts),
 * as far as its spans are drawn from them: submission, dispatch, the instance's own stamps, and the
 * spans the engine started at dispatch.
 */
export interface QueuedTimes {
  readonly submittedMs: number;
  readonly dispatchedMs?: number;
  readonly timings?: { readonly computeInputUs: number; readonly computeInferUs: number };
  readonly compute?: RunningSpan;
  readonly batch?: RequestTrace;
}

/**
 * Records a settled request's spans under its trace from the times the engine keeps: `queue` from
 * submission to dispatch, then `compute` (its batch's run on an instance, which includes crossing
 * to a worker and back) with `compute_infer`, the model's own run as the instance stamped it.
 * The split follows Triton's trace timestamps (QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END...; docs/tracing.md).
 */
export async function tracedRequest<R>(settled: Promise<R>, trace: RequestTrace, queued: QueuedTimes, attributes: Attributes): Promise<R> {
  let failed = false;
  try {
    return await settled;
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    const end = now();
    const dispatched = queued.dispatchedMs;
    trace.child('queue', queued.submittedMs, dispatched ?? end, attributes);
    const compute = queued.compute;
    if (dispatched !== undefined && compute) {
      const t = queued.timings;
      if (t) {
        const inferStart = dispatched + t.computeInputUs / 1000;
        compute.trace.child('compute_infer', inferStart, inferStart + t.computeInferUs / 1000, attributes);
      }
      compute.end(end, failed);
    }
  }
}

/**
 * Records the spans of a request queued as several sequences (submitAll) once all have settled: one
 * `queue` span from its queueing to its first sequence's dispatch, and one `compute` span from there
 * to its last answer, linked to each batch its sequences ran in, with a `compute_infer` per batch.
 */
export async function tracedSequences(settled: readonly Promise<unknown>[], trace: RequestTrace, queued: readonly QueuedTimes[], attributes: Attributes): Promise<void> {
  const outcomes = await Promise.allSettled(settled);
  const end = now();
  const submitted = Math.min(...queued.map((q) => q.submittedMs));
  const dispatched = queued.filter((q) => q.dispatchedMs !== undefined);
  const firstDispatch = dispatched.length > 0 ? Math.min(...dispatched.map((q) => q.dispatchedMs!)) : undefined;
  trace.child('queue', submitted, firstDispatch ?? end, attributes);
  if (firstDispatch === undefined) return;
  // The sequences of one batch share its run, so the batch's first one stands for it.
  const perBatch = new Map<RequestTrace, QueuedTimes>();
  for (const q of dispatched) if (q.batch && !perBatch.has(q.batch)) perBatch.set(q.batch, q);
  const compute = trace.start('compute', firstDispatch, attributes, [...perBatch.keys()]);
  for (const q of perBatch.values()) {
    const t = q.timings;
    if (!t) continue;
    const inferStart = q.dispatchedMs! + t.computeInputUs / 1000;
    compute.trace.child('compute_infer', inferStart, inferStart + t.computeInferUs / 1000, attributes);
  }
  compute.end(end, outcomes.some((o) => o.status === 'rejected'));
}
