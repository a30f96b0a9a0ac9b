import { describe, expect, it } from 'vitest';
import { createError, deserializeError, serializeError } from '../../src/errors/index.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { requestQueued, requestSettled, type RequestClock } from '../../src/engine/request-accounting.js';
import { now } from '../../src/wire/epoch-time.js';

async function reasonCounted(err: unknown): Promise<Record<string, number>> {
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const queued: RequestClock = { submittedMs: now() };
  const dispatched = async (q: RequestClock): Promise<never> => {
    q.dispatchedMs = now();
    throw err;
  };
  requestQueued(recorder, 'm', '1');
  await expect(requestSettled(recorder, 'm', '1', queued, dispatched(queued))).rejects.toBe(err);
  const metric = await recorder.registry.getSingleMetric('nv_inference_request_failure')!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.reason), v.value]));
}

describe('requestSettled', () => {
  it("counts a client error from inside the model (its validation's 400) as OTHER, not BACKEND", async () => {
    // As a worker thread hands it back: serialised, with its status.
    const fromWorker = deserializeError(serializeError(createError('SF_ERR_TENSOR_SHAPE', 'x', '[1,3]', '[1,4]')));
    expect(await reasonCounted(fromWorker)).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 1 });
    const modelsOwn = Object.assign(new Error('text too long'), { statusCode: 422 });
    expect(await reasonCounted(modelsOwn)).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 1 });
  });

  it('counts a model that failed as BACKEND', async () => {
    expect(await reasonCounted(new Error('boom'))).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 1, OTHER: 0 });
    expect(await reasonCounted(createError('SF_ERR_EXECUTION_FAILED', 'm', 'run', 'boom'))).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 1, OTHER: 0 });
  });

  it('counts a queue timeout as REJECTED and a cancelled request as CANCELED', async () => {
    expect(await reasonCounted(createError('SF_ERR_TIMEOUT'))).toEqual({ REJECTED: 1, CANCELED: 0, BACKEND: 0, OTHER: 0 });
    expect(await reasonCounted(createError('SF_ERR_CANCELLED'))).toEqual({ REJECTED: 0, CANCELED: 1, BACKEND: 0, OTHER: 0 });
  });
});
