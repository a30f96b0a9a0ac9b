import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ModelMetricFamilies } from '../metrics/model-metric-families.js';

/** Which of TEI's metric families a request counts in beside `te_request_*`: embeddings, or classifier / reranker scores. */
export type TextMetricFamily = 'embed' | 'predict';

/** TEI's `err` labels of te_request_failure; 'dropped' is a request whose client left while it was queued. */
export type TextFailure = 'validation' | 'batch_size' | 'overloaded' | 'tokenization' | 'inference' | 'model_type' | 'dropped';

export interface TextRequestTimes {
  readonly totalMs: number;
  readonly tokenizationMs: number;
  readonly queueMs: number;
  readonly inferenceMs: number;
}

/** TEI's duration buckets (router/src/prometheus.rs): 35 steps growing ×1.5 from 15 µs, in seconds. */
const DURATION_BUCKETS = Array.from({ length: 35 }, (_, i) => 1.5e-5 * 1.5 ** i);
/** TEI's buckets for lengths and batch sizes: powers of two. */
const SIZE_BUCKETS = Array.from({ length: 20 }, (_, i) => 2 ** i);

/**
 * TEI's Prometheus metrics (`te_*`), registered beside serve-fn's `nv_*` ones so dashboards built
 * for TEI keep working. TEI serves one model and labels none; serve-fn may serve several, so each
 * series carries `model` too. One instance per registry, shared by every text model.
 */
export class TextMetrics {
  private readonly requests: Counter<'model' | 'method'>;
  private readonly successes: Counter<'model' | 'method'>;
  private readonly failures: Counter<'model' | 'err'>;
  private readonly familyCounts: Record<TextMetricFamily, { count: Counter<'model'>; success: Counter<'model'> }>;
  private readonly durations: Record<'request' | TextMetricFamily, Record<keyof TextRequestTimes, Histogram<'model'>>>;
  private readonly inputLength: Histogram<'model'>;
  private readonly batchSize: Histogram<'model'>;
  private readonly batchTokens: Histogram<'model'>;
  private readonly queueSize: Gauge<'model'>;

  constructor(registry: Registry) {
    const families = new ModelMetricFamilies(registry, 'model');
    const histogram = (name: string, help: string, buckets: readonly number[]) => families.histogram(name, help, buckets);
    this.requests = families.counter('te_request_count', 'Inference requests received, by single or batch input', ['method']);
    this.successes = families.counter('te_request_success', 'Inference requests answered', ['method']);
    this.failures = families.counter('te_request_failure', 'Inference requests failed, by reason', ['err']);
    const family = (name: TextMetricFamily) => ({
      count: families.counter(`te_${name}_count`, `${name} requests received`),
      success: families.counter(`te_${name}_success`, `${name} requests answered`),
    });
    this.familyCounts = { embed: family('embed'), predict: family('predict') };
    const durations = (prefix: string) => ({
      totalMs: histogram(`te_${prefix}_duration`, `${prefix} duration in seconds`, DURATION_BUCKETS),
      tokenizationMs: histogram(`te_${prefix}_tokenization_duration`, `${prefix} tokenization duration in seconds`, DURATION_BUCKETS),
      queueMs: histogram(`te_${prefix}_queue_duration`, `${prefix} queue duration in seconds`, DURATION_BUCKETS),
      inferenceMs: histogram(`te_${prefix}_inference_duration`, `${prefix} inference duration in seconds`, DURATION_BUCKETS),
    });
    this.durations = { request: durations('request'), embed: durations('embed'), predict: durations('predict') };
    this.inputLength = histogram('te_request_input_length', 'Tokens per input', SIZE_BUCKETS);
    this.batchSize = histogram('te_batch_next_size', 'Inputs per forward batch', SIZE_BUCKETS);
    this.batchTokens = histogram('te_batch_next_tokens', 'Padded tokens per forward batch', SIZE_BUCKETS);
    this.queueSize = families.gauge('te_queue_size', 'Inputs waiting for a forward batch');
  }

  received(model: string, family: TextMetricFamily, inputs: number): void {
    this.requests.inc({ model, method: inputs > 1 ? 'batch' : 'single' });
    this.familyCounts[family].count.inc({ model });
  }

  answered(model: string, family: TextMetricFamily, inputs: number, times: TextRequestTimes): void {
    this.successes.inc({ model, method: inputs > 1 ? 'batch' : 'single' });
    this.familyCounts[family].success.inc({ model });
    for (const scope of ['request', family] as const) {
      for (const key of Object.keys(times) as (keyof TextRequestTimes)[]) this.durations[scope][key].observe({ model }, times[key] / 1000);
    }
  }

  failed(model: string, err: TextFailure): void {
    this.failures.inc({ model, err });
  }

  tokenized(model: string, tokens: number): void {
    this.inputLength.observe({ model }, tokens);
  }

  batched(model: string, rows: number, paddedTokens: number): void {
    this.batchSize.observe({ model }, rows);
    this.batchTokens.observe({ model }, paddedTokens);
  }

  queued(model: string, size: number): void {
    this.queueSize.set({ model }, size);
  }
}
