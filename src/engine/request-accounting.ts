import { ServeFnError, statusOf } from '../errors/index.js';
import type { BatchTimings, FailureReason, InferenceRecorder } from '../metrics/inference-recorder.js';
import type { RequestTrace, RunningSpan } from '../tracing/request-tracing.js';
import { now } from '../wire/epoch-time.js';
import type { ExecuteOutcome } from '../wire/wire-format.js';

export function toUs(ms: number): number {
  return Math.max(0, Math.round(ms * 1000));
}

/**
 * Triton's failure reason of a request that failed after (`dispatched`) or before reaching an
 * instance. A client error (4xx: a tensor of the wrong shape, a model's own HttpError(400)) is
 * `OTHER` even from inside the model, as Triton counts a request its core refuses as invalid:
 * `BACKEND` is for the model failing, which is what an alert on it means to catch.
 */
export function failureReason(err: unknown, dispatched: boolean): FailureReason {
  const code = err instanceof ServeFnError ? err.code : undefined;
  if (code === 'SF_ERR_CANCELLED') return 'CANCELED';
  if (code === 'SF_ERR_QUEUE_FULL' || code === 'SF_ERR_TIMEOUT' || code === 'SF_ERR_DRAINING' || code === 'SF_ERR_MODEL_UNAVAILABLE') return 'REJECTED';
  return dispatched && statusOf(err) >= 500 ? 'BACKEND' : 'OTHER';
}

/** The times a queued request collects on its way; the batch executor fills in the last two. */
export interface RequestClock {
  readonly submittedMs: number;
  dispatchedMs?: number;
  timings?: BatchTimings;
  /** The request's trace when it is traced: the engine starts its `compute` span at dispatch (instance-engine.ts). */
  trace?: RequestTrace;
  compute?: RunningSpan;
  /**
   * For one of several sequences of a traced request (InstanceEngine.submitAll): the `batch` span it
   * ran in. Such a request gets one compute span for all its sequences, linked to each of their
   * batches, rather than one per sequence.
   */
  batch?: RequestTrace;
  /** Set by submitAll on a traced request's sequences: record `batch`, start no compute span of its own. */
  sharesCompute?: true;
}

/**
 * When a batch began to run: when it was sent, or, queued behind the instance's running batch, when
 * the instance took it up; the wait in between is queue time, as in the batcher.
 */
export function batchStartMs(sentMs: number, outcome: Pick<ExecuteOutcome, 'takenMs'>, queuedBehind: boolean): number {
  return queuedBehind ? Math.max(sentMs, outcome.takenMs ?? sentMs) : sentMs;
}

/** How long an execution spent getting to the model, in it, and coming back, from the instance's own stamps. */
export function executionTimings(outcome: Pick<ExecuteOutcome, 'computeStartMs' | 'computeEndMs'>, sentMs: number, receivedMs: number): BatchTimings {
  return {
    computeInputUs: toUs(outcome.computeStartMs - sentMs),
    computeInferUs: toUs(outcome.computeEndMs - outcome.computeStartMs),
    computeOutputUs: toUs(receivedMs - outcome.computeEndMs),
  };
}

/** A request is pending from now on; requestSettled counts it as Triton counts requests once it settles. */
export function requestQueued(recorder: InferenceRecorder, model: string, version: string): void {
  recorder.pendingChanged(model, version, 1);
}

/** Counts the request queued with requestQueued once `pending` settles: one success with its own queue and compute times, or one failure with its reason. */
export async function requestSettled<R>(recorder: InferenceRecorder, model: string, version: string, queued: RequestClock, pending: Promise<R>): Promise<R> {
  try {
    const result = await pending;
    const end = now();
    recorder.requestSucceeded(model, version, {
      requestUs: toUs(end - queued.submittedMs),
      queueUs: toUs((queued.dispatchedMs ?? end) - queued.submittedMs),
      computeInputUs: queued.timings?.computeInputUs ?? 0,
      computeInferUs: queued.timings?.computeInferUs ?? 0,
      computeOutputUs: queued.timings?.computeOutputUs ?? 0,
    });
    return result;
  } catch (err) {
    if (queued.dispatchedMs === undefined) recorder.pendingChanged(model, version, -1);
    recorder.requestFailed(model, version, failureReason(err, queued.dispatchedMs !== undefined), {
      requestUs: toUs(now() - queued.submittedMs),
    });
    throw err;
  }
}
