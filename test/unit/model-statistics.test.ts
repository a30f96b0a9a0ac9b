import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import { ModelStatisticsStore, type ModelStatistics } from '../../src/metrics/model-statistics.js';

const zero = { count: 0, ns: 0 };

function emptyStats(name: string, version: string): ModelStatistics {
  return {
    name,
    version,
    last_inference: 0,
    inference_count: 0,
    execution_count: 0,
    inference_stats: {
      success: zero,
      fail: zero,
      queue: zero,
      compute_input: zero,
      compute_infer: zero,
      compute_output: zero,
      cache_hit: zero,
      cache_miss: zero,
    },
    response_stats: {},
    batch_stats: [],
    memory_usage: [],
  };
}

describe('ModelStatisticsStore', () => {
  it('lists a registered model that never ran with zeros', () => {
    const store = new ModelStatisticsStore();
    expect(store.register('m', '1')).toBe(true);
    expect(store.snapshot()).toEqual({ model_stats: [emptyStats('m', '1')] });
  });

  it('counts batch elements as inferences, batches as executions, and durations per request', () => {
    const store = new ModelStatisticsStore();
    store.recordBatch('m', '1', 2, { computeInputUs: 10, computeInferUs: 200, computeOutputUs: 30 }, 1_000);
    store.recordBatch('m', '1', 4, { computeInputUs: 20, computeInferUs: 400, computeOutputUs: 40 }, 2_000);
    store.recordBatch('m', '1', 2, { computeInputUs: 1, computeInferUs: 2, computeOutputUs: 3 }, 3_000);
    for (let i = 0; i < 3; i++) {
      store.recordSuccess('m', '1', { requestUs: 500, queueUs: 50, computeInputUs: 10, computeInferUs: 200, computeOutputUs: 30 }, 4_000);
    }
    store.recordFailure('m', '1', 700);

    expect(store.snapshot('m', '1')).toEqual({
      model_stats: [
        {
          ...emptyStats('m', '1'),
          last_inference: 4_000,
          inference_count: 8,
          execution_count: 3,
          inference_stats: {
            success: { count: 3, ns: 1_500_000 },
            fail: { count: 1, ns: 700_000 },
            queue: { count: 3, ns: 150_000 },
            compute_input: { count: 3, ns: 30_000 },
            compute_infer: { count: 3, ns: 600_000 },
            compute_output: { count: 3, ns: 90_000 },
            cache_hit: zero,
            cache_miss: zero,
          },
          batch_stats: [
            { batch_size: 2, compute_input: { count: 2, ns: 11_000 }, compute_infer: { count: 2, ns: 202_000 }, compute_output: { count: 2, ns: 33_000 } },
            { batch_size: 4, compute_input: { count: 1, ns: 20_000 }, compute_infer: { count: 1, ns: 400_000 }, compute_output: { count: 1, ns: 40_000 } },
          ],
        },
      ],
    });
  });

  it('orders batch_stats by batch size whatever the order they first ran in', () => {
    const store = new ModelStatisticsStore();
    const t = { computeInputUs: 0, computeInferUs: 0, computeOutputUs: 0 };
    for (const size of [8, 1, 3]) store.recordBatch('m', '1', size, t, 0);
    expect(store.snapshot().model_stats[0]!.batch_stats.map((b) => b.batch_size)).toEqual([1, 3, 8]);
  });

  it('converts microseconds to whole nanoseconds', () => {
    const store = new ModelStatisticsStore();
    store.recordFailure('m', '1', 1.5);
    store.recordFailure('m', '1', 0.0004);
    expect(store.snapshot().model_stats[0]!.inference_stats.fail).toEqual({ count: 2, ns: 1_500 });
  });

  it('keeps last_inference at the latest time even if an earlier one is recorded after it', () => {
    const store = new ModelStatisticsStore();
    const t = { computeInputUs: 0, computeInferUs: 0, computeOutputUs: 0 };
    store.recordBatch('m', '1', 1, t, 5_000);
    store.recordBatch('m', '1', 1, t, 4_000);
    expect(store.snapshot().model_stats[0]!.last_inference).toBe(5_000);
  });

  it('leaves last_inference alone on failures', () => {
    const store = new ModelStatisticsStore();
    store.recordFailure('m', '1', 10);
    expect(store.snapshot().model_stats[0]!.last_inference).toBe(0);
  });

  it('keeps the values when a model is registered again', () => {
    const store = new ModelStatisticsStore();
    store.recordFailure('m', '1', 1);
    expect(store.register('m', '1')).toBe(false);
    expect(store.snapshot().model_stats[0]!.inference_stats.fail).toEqual({ count: 1, ns: 1_000 });
  });

  it('filters by model and version and orders by name then numeric version', () => {
    const store = new ModelStatisticsStore();
    for (const [m, v] of [['b', '10'], ['a', '1'], ['b', '2'], ['b', '1']] as const) store.register(m, v);
    const ids = (r: { model_stats: ModelStatistics[] }) => r.model_stats.map((s) => `${s.name}@${s.version}`);

    expect(ids(store.snapshot())).toEqual(['a@1', 'b@1', 'b@2', 'b@10']);
    expect(ids(store.snapshot('b'))).toEqual(['b@1', 'b@2', 'b@10']);
    expect(ids(store.snapshot('b', '2'))).toEqual(['b@2']);
  });

  it('answers an unknown model or version with the catalogue 404 errors', () => {
    const store = new ModelStatisticsStore();
    store.register('m', '1');
    const thrown = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (err) {
        return err;
      }
      return undefined;
    };
    const unknownModel = thrown(() => store.snapshot('nope'));
    expect(unknownModel).toBeInstanceOf(ServeFnError);
    expect(unknownModel).toMatchObject({ code: 'SF_ERR_MODEL_UNKNOWN', statusCode: 404, message: "Request for unknown model: 'nope' is not found" });
    const unknownVersion = thrown(() => store.snapshot('m', '2'));
    expect(unknownVersion).toBeInstanceOf(ServeFnError);
    expect(unknownVersion).toMatchObject({
      code: 'SF_ERR_MODEL_VERSION_UNKNOWN',
      statusCode: 404,
      message: "Request for unknown model: 'm' version 2 is not found",
    });
  });

  it('returns copies that callers cannot use to change the store', () => {
    const store = new ModelStatisticsStore();
    store.recordBatch('m', '1', 2, { computeInputUs: 1, computeInferUs: 1, computeOutputUs: 1 }, 0);
    const first = store.snapshot().model_stats[0]!;
    first.inference_stats.fail.count = 99;
    first.batch_stats[0]!.compute_infer.ns = 99;
    first.inference_count = 99;
    const again = store.snapshot().model_stats[0]!;
    expect(again.inference_stats.fail.count).toBe(0);
    expect(again.batch_stats[0]!.compute_infer.ns).toBe(1_000);
    expect(again.inference_count).toBe(2);
  });
});
