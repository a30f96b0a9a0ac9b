import { Counter, Gauge, Histogram, Registry, Summary, collectDefaultMetrics } from 'prom-client';
import {
  ModelStatisticsStore,
  type BatchTimings,
  type ModelStatisticsResponse,
  type RequestTimings,
} from './model-statistics.js';

export type { BatchTimings, RequestTimings } from './model-statistics.js';

/** Triton's values of the `reason` label of nv_inference_request_failure. */
export const FAILURE_REASONS = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export const BATCH_SIZE_BUCKETS: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/**
 * Buckets of the latency histograms, in seconds: from a millisecond (a small model on a CPU) to a
 * minute (a long queue), so `histogram_quantile(0.99, ...)` reads a p99 across replicas.
 */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Triton's default `summary_quantiles` (`--metrics-config summary_quantiles=0.5:0.05,0.9:0.01,0.95:0.001,0.99:0.001`);
 * prom-client's summary takes the quantiles, its t-digest keeps its own error bound.
 */
export const SUMMARY_QUANTILES: readonly number[] = [0.5, 0.9, 0.95, 0.99];

export interface InferenceRecorderOptions {
  /** Where the metrics are registered; a fresh registry by default, never prom-client's global one. */
  registry?: Registry;
  /** Adds prom-client's default process metrics (CPU, memory, event loop); default true. */
  collectProcessMetrics?: boolean;
  /** Wall clock in ms since the epoch, for `last_inference`; Date.now by default. */
  now?: () => number;
  /**
   * Adds Triton's latency summaries (`nv_inference_*_summary_us`), off by default as in Triton
   * (`--metrics-config summary_latencies=true`): each observation costs more than a histogram's.
   */
  summaryLatencies?: boolean;
}

/** The latency figures of a request, each observed by a histogram and, when on, Triton's summary. */
type LatencyFigure = 'requestUs' | 'queueUs' | 'computeInputUs' | 'computeInferUs' | 'computeOutputUs';

/** A latency figure's observers; a histogram only for the three figures a p99 is asked of. */
interface LatencyObservers {
  readonly figure: LatencyFigure;
  readonly histogram?: Histogram<ModelLabel>;
  readonly summary?: Summary<ModelLabel>;
}

type ModelLabel = 'model' | 'version';

/**
 * The per-request figures of one model version as plain sums. prom-client hashes and checks the
 * labels on every inc(), a child from labels() included, which cost ~10 label look-ups per request;
 * the counters below read these sums in their `collect()`, which prom-client runs at each scrape
 * (https://github.com/siimon/prom-client#usage, "collect").
 */
interface ModelTotals {
  readonly labels: { readonly model: string; readonly version: string };
  success: number;
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
  inferences: number;
  executions: number;
  pending: number;
}

/** Records each inference event once and feeds both Prometheus and the statistics, so the two agree. */
export class InferenceRecorder {
  readonly registry: Registry;
  private readonly store = new ModelStatisticsStore();
  private readonly totals = new Map<string, Map<string, ModelTotals>>();
  /** In registration order, the order the label sets appear in /metrics. */
  private readonly totalsInOrder: ModelTotals[] = [];
  private readonly now: () => number;
  private readonly failure: Counter<ModelLabel | 'reason'>;
  private readonly batchSize: Histogram<ModelLabel>;
  private readonly restarts: Counter<ModelLabel | 'instance'>;
  private readonly latencies: readonly LatencyObservers[];
  /** Per stateful model version (`model\0version`), how to read its live sequences (serve_fn_sequences_live). */
  private readonly liveSequences = new Map<string, () => number>();

  constructor(options: InferenceRecorderOptions = {}) {
    this.registry = options.registry ?? new Registry();
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    const totals = this.totalsInOrder;
    const counter = (name: string, help: string, read: (t: ModelTotals) => number): Counter<ModelLabel> =>
      new Counter({
        name,
        help,
        labelNames: ['model', 'version'],
        registers,
        collect(this: Counter<ModelLabel>) {
          this.reset();
          for (const t of totals) this.inc(t.labels, read(t));
        },
      });

    counter('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', (t) => t.success);
    this.failure = new Counter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes, by reason (REJECTED, CANCELED, BACKEND, OTHER)',
      labelNames: ['model', 'version', 'reason'],
      registers,
    });
    counter('nv_inference_count', 'Number of inferences performed: each batch element counts', (t) => t.inferences);
    counter('nv_inference_exec_count', 'Number of model executions performed: each batch counts once', (t) => t.executions);
    counter('nv_inference_request_duration_us', 'Cumulative end-to-end duration of successful inference requests in microseconds', (t) => t.requestUs);
    counter('nv_inference_queue_duration_us', 'Cumulative time successful requests waited in the queue in microseconds', (t) => t.queueUs);
    counter('nv_inference_compute_input_duration_us', 'Cumulative compute input duration of successful requests in microseconds', (t) => t.computeInputUs);
    counter('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration of successful requests in microseconds', (t) => t.computeInferUs);
    counter('nv_inference_compute_output_duration_us', 'Cumulative compute output duration of successful requests in microseconds', (t) => t.computeOutputUs);
    new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of requests accepted and awaiting execution',
      labelNames: ['model', 'version'],
      registers,
      collect(this: Gauge<ModelLabel>) {
        this.reset();
        for (const t of totals) this.set(t.labels, t.pending);
      },
    });
    const liveSequences = this.liveSequences;
    new Gauge({
      name: 'serve_fn_sequences_live',
      help: 'Instantaneous number of live sequences of a stateful model (sequence_batching): started, not yet ended or expired',
      labelNames: ['model', 'version'],
      registers,
      collect(this: Gauge<ModelLabel>) {
        this.reset();
        for (const [key, read] of liveSequences) {
          const [model, version] = key.split('\u0000');
          this.set({ model, version }, read());
        }
      },
    });
    this.batchSize = new Histogram({
      name: 'serve_fn_batch_size',
      help: 'Number of requests in each model execution',
      labelNames: ['model', 'version'],
      buckets: [...BATCH_SIZE_BUCKETS],
      registers,
    });
    this.restarts = new Counter({
      name: 'serve_fn_instance_restarts_total',
      help: 'Number of times a model instance was restarted after it crashed',
      labelNames: ['model', 'version', 'instance'],
      registers,
    });
    this.latencies = latencyObservers(registers, options.summaryLatencies ?? false);
    if (options.collectProcessMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Makes a model version appear in /metrics and in statistics with zeros before it serves a
   * request, as Triton lists every loaded model. Registering twice keeps the values.
   */
  registerModel(model: string, version: string): void {
    this.totalsOf(model, version);
  }

  private totalsOf(model: string, version: string): ModelTotals {
    const known = this.totals.get(model)?.get(version);
    if (known) return known;
    this.store.register(model, version);
    const labels = { model, version };
    const totals: ModelTotals = { labels, success: 0, requestUs: 0, queueUs: 0, computeInputUs: 0, computeInferUs: 0, computeOutputUs: 0, inferences: 0, executions: 0, pending: 0 };
    let versions = this.totals.get(model);
    if (!versions) this.totals.set(model, (versions = new Map()));
    versions.set(version, totals);
    this.totalsInOrder.push(totals);
    for (const reason of FAILURE_REASONS) this.failure.inc({ model, version, reason }, 0);
    this.batchSize.zero(labels);
    for (const { histogram } of this.latencies) histogram?.zero(labels);
    return totals;
  }

  /** A request answered successfully; its times are its own, not divided among its batch. */
  requestSucceeded(model: string, version: string, t: RequestTimings): void {
    assertDurations(t);
    const totals = this.totalsOf(model, version);
    totals.success += 1;
    totals.requestUs += t.requestUs;
    totals.queueUs += t.queueUs;
    totals.computeInputUs += t.computeInputUs;
    totals.computeInferUs += t.computeInferUs;
    totals.computeOutputUs += t.computeOutputUs;
    for (const { figure, histogram, summary } of this.latencies) {
      histogram?.observe(totals.labels, t[figure] / 1e6);
      summary?.observe(totals.labels, t[figure]);
    }
    this.store.recordSuccess(model, version, t, this.now());
  }

  /**
   * A request that got no answer. Only `requestUs` is counted (in statistics `fail.ns`): like
   * Triton, the duration counters and queue/compute statistics describe successful requests only.
   */
  requestFailed(model: string, version: string, reason: FailureReason, t: Partial<RequestTimings> = {}): void {
    if (!FAILURE_REASONS.includes(reason)) {
      throw new RangeError(`Failure reason must be one of ${FAILURE_REASONS.join(', ')}, got '${String(reason)}'.`);
    }
    const requestUs = t.requestUs ?? 0;
    assertDurations({ requestUs });
    this.registerModel(model, version);
    this.failure.inc({ model, version, reason });
    this.store.recordFailure(model, version, requestUs);
  }

  /** One model execution (one model call) of `batchSize` batch elements: rows for tensor models, requests for endpoints. */
  batchExecuted(model: string, version: string, batchSize: number, t: BatchTimings): void {
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new RangeError(`Batch size must be an integer >= 1, got ${batchSize}.`);
    }
    assertDurations(t);
    const totals = this.totalsOf(model, version);
    totals.executions += 1;
    totals.inferences += batchSize;
    this.batchSize.observe(totals.labels, batchSize);
    this.store.recordBatch(model, version, batchSize, t, this.now());
  }

  /** Requests entered (+n) or left (-n) the model's queue and running executions. */
  pendingChanged(model: string, version: string, delta: number): void {
    if (!Number.isInteger(delta)) throw new RangeError(`Pending delta must be an integer, got ${delta}.`);
    this.totalsOf(model, version).pending += delta;
  }

  /** Reports a stateful model version's live sequences in serve_fn_sequences_live; a reloaded version's scheduler replaces its predecessor's. */
  trackLiveSequences(model: string, version: string, read: () => number): void {
    this.liveSequences.set(`${model}\u0000${version}`, read);
  }

  instanceRestarted(model: string, version: string, instance: number): void {
    this.registerModel(model, version);
    this.restarts.inc({ model, version, instance: String(instance) });
  }

  /** Triton statistics: all models, every version of `model`, or one version. */
  statistics(model?: string, version?: string): ModelStatisticsResponse {
    return this.store.snapshot(model, version);
  }
}

/**
 * Histograms in seconds under serve-fn's names (Prometheus' base unit, as vLLM's
 * `vllm:e2e_request_latency_seconds`): Triton has no per-request latency histogram, only summaries,
 * and summaries cannot be aggregated across replicas. The summaries keep Triton's names and µs.
 */
function latencyObservers(registers: Registry[], summaries: boolean): LatencyObservers[] {
  const labelNames = ['model', 'version'] as const;
  const histogram = (name: string, help: string): Histogram<ModelLabel> =>
    new Histogram({ name, help, labelNames, buckets: [...LATENCY_BUCKETS_SECONDS], registers });
  // prometheus-cpp's defaults, which Triton's summaries use: a 60 s window in 5 age buckets.
  const summary = (name: string, help: string): Summary<ModelLabel> | undefined =>
    summaries ? new Summary({ name, help, labelNames, percentiles: [...SUMMARY_QUANTILES], maxAgeSeconds: 60, ageBuckets: 5, registers }) : undefined;
  return [
    {
      figure: 'requestUs',
      histogram: histogram('serve_fn_inference_request_duration_seconds', 'End-to-end duration of successful inference requests in seconds'),
      summary: summary('nv_inference_request_summary_us', 'Summary of end-to-end duration of successful inference requests in microseconds'),
    },
    {
      figure: 'queueUs',
      histogram: histogram('serve_fn_inference_queue_duration_seconds', 'Time successful inference requests waited in the queue in seconds'),
      summary: summary('nv_inference_queue_summary_us', 'Summary of time successful requests waited in the queue in microseconds'),
    },
    {
      figure: 'computeInputUs',
      summary: summary('nv_inference_compute_input_summary_us', 'Summary of compute input duration of successful requests in microseconds'),
    },
    {
      figure: 'computeInferUs',
      histogram: histogram('serve_fn_inference_compute_infer_duration_seconds', 'Time successful inference requests spent running the model in seconds'),
      summary: summary('nv_inference_compute_infer_summary_us', 'Summary of compute inference duration of successful requests in microseconds'),
    },
    {
      figure: 'computeOutputUs',
      summary: summary('nv_inference_compute_output_summary_us', 'Summary of compute output duration of successful requests in microseconds'),
    },
  ].filter((o) => o.histogram ?? o.summary) as LatencyObservers[];
}

/**
 * Durations come from the runtime, never from users, so a bad one is a runtime bug. Checking all of
 * them before anything is counted keeps Prometheus and statistics from diverging half-way
 * (prom-client would throw on a negative counter increment only after earlier counters moved).
 */
function assertDurations(t: object): void {
  // for…in rather than Object.entries: this runs for every request and execution, and the entries'
  // arrays were garbage on the HTTP thread each time.
  for (const name in t) {
    const value: unknown = (t as Record<string, unknown>)[name];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`${name} must be a finite number of microseconds >= 0, got ${String(value)}.`);
    }
  }
}
