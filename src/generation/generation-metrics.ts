import type { Counter, Histogram, Registry } from 'prom-client';
import { ModelMetricFamilies } from '../metrics/model-metric-families.js';
import type { GenerationSequence } from './generation-stream.js';
import type { IterationEvents } from './iteration-scheduler.js';
import type { FinishReason } from './text-generator.js';

/**
 * vLLM's Prometheus series under their exact names (docs/design/metrics.md; vllm/v1/metrics/loggers.py),
 * each with a `model_name` label, so vLLM's dashboards and autoscalers read serve-fn unchanged.
 * prom-client writes a counter's name as given, so the `_total` vLLM's client adds is in the name.
 * Bucket bounds are vLLM's.
 */

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];

/** What the gauges read from one generator's scheduler when scraped. */
export interface SchedulerGauges {
  readonly pendingCount: number;
  readonly inflightCount: number;
  readonly kvUsage: number;
}

export class GenerationMetrics {
  private readonly sources = new Map<string, SchedulerGauges>();
  private readonly preemptions: Counter<'model_name'>;
  private readonly promptTokens: Counter<'model_name'>;
  private readonly generationTokens: Counter<'model_name'>;
  private readonly success: Counter<'model_name' | 'finished_reason'>;
  private readonly ttft: Histogram<'model_name'>;
  private readonly itl: Histogram<'model_name'>;
  private readonly e2e: Histogram<'model_name'>;
  private readonly queue: Histogram<'model_name'>;

  constructor(registry: Registry) {
    const families = new ModelMetricFamilies(registry, 'model_name');
    const gauge = (name: string, help: string, read: (s: SchedulerGauges) => number): void => {
      families.gauge(name, help, (set) => {
        for (const [model, source] of this.sources) set(model, read(source));
      });
    };
    gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', (s) => s.inflightCount);
    gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', (s) => s.pendingCount);
    gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', (s) => s.kvUsage);
    this.preemptions = families.counter('vllm:num_preemptions_total', 'Cumulative number of preemption from the engine.');
    this.promptTokens = families.counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.');
    this.generationTokens = families.counter('vllm:generation_tokens_total', 'Number of generation tokens processed.');
    this.success = families.counter('vllm:request_success_total', 'Count of successfully processed requests.', ['finished_reason']);
    this.ttft = families.histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS);
    this.itl = families.histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', ITL_BUCKETS);
    this.e2e = families.histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQUEST_LATENCY_BUCKETS);
    this.queue = families.histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST_LATENCY_BUCKETS);
  }

  /** The scheduler events of one generator, counted under `model`; its gauges read `gauges` when scraped. */
  eventsFor(model: string, gauges: SchedulerGauges): IterationEvents {
    this.sources.set(model, gauges);
    const labels = { model_name: model };
    // Initialised so a scrape shows every series at 0 before the first request, as vLLM does.
    for (const counter of [this.preemptions, this.promptTokens, this.generationTokens]) counter.inc(labels, 0);
    return {
      scheduled: (_s, queueSeconds) => this.queue.observe(labels, queueSeconds),
      token: (_s, seconds, first) => {
        this.generationTokens.inc(labels);
        (first ? this.ttft : this.itl).observe(labels, seconds);
      },
      preempted: () => this.preemptions.inc(labels),
      finished: (sequence: GenerationSequence, reason: FinishReason) => {
        this.promptTokens.inc(labels, sequence.request.promptTokenIds.length);
        this.success.inc({ ...labels, finished_reason: reason });
        this.e2e.observe(labels, ((sequence.finishedUs ?? sequence.arrivalUs) - sequence.arrivalUs) / 1e6);
      },
    };
  }
}
