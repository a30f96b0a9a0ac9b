import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
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

export interface InferenceRecorderOptions {
  /** Where the metrics are registered; a fresh registry by default, never prom-client's global one. */
  registry?: Registry;
  /** Adds prom-client's default process metrics (CPU, memory, event loop); default true. */
  collectProcessMetrics?: boolean;
  /** Wall clock in ms since the epoch, for `last_inference`; Date.now by default. */
  now?: () => number;
}

type ModelLabel = 'model' | 'version';

/** Records each inference event once and feeds both Prometheus and the statistics, so the two agree. */
export class InferenceRecorder {
  readonly registry: Registry;
  private readonly store = new ModelStatisticsStore();
  private readonly now: () => number;
  private readonly success: Counter<ModelLabel>;
  private readonly failure: Counter<ModelLabel | 'reason'>;
  private readonly inferences: Counter<ModelLabel>;
  private readonly executions: Counter<ModelLabel>;
  private readonly requestDuration: Counter<ModelLabel>;
  private readonly queueDuration: Counter<ModelLabel>;
  private readonly computeInputDuration: Counter<ModelLabel>;
  private readonly computeInferDuration: Counter<ModelLabel>;
  private readonly computeOutputDuration: Counter<ModelLabel>;
  private readonly pending: Gauge<ModelLabel>;
  private readonly batchSize: Histogram<ModelLabel>;
  private readonly restarts: Counter<ModelLabel | 'instance'>;

  constructor(options: InferenceRecorderOptions = {}) {
    this.registry = options.registry ?? new Registry();
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    const counter = (name: string, help: string): Counter<ModelLabel> =>
      new Counter({ name, help, labelNames: ['model', 'version'], registers });

    this.success = counter('nv_inference_request_success', 'Number of successful inference requests, all batch sizes');
    this.failure = new Counter({
      name: 'nv_inference_request_failure',
      help: 'Number of failed inference requests, all batch sizes, by reason (REJECTED, CANCELED, BACKEND, OTHER)',
      labelNames: ['model', 'version', 'reason'],
      registers,
    });
    this.inferences = counter('nv_inference_count', 'Number of inferences performed: each batch element counts');
    this.executions = counter('nv_inference_exec_count', 'Number of model executions performed: each batch counts once');
    this.requestDuration = counter('nv_inference_request_duration_us', 'Cumulative end-to-end duration of successful inference requests in microseconds');
    this.queueDuration = counter('nv_inference_queue_duration_us', 'Cumulative time successful requests waited in the queue in microseconds');
    this.computeInputDuration = counter('nv_inference_compute_input_duration_us', 'Cumulative compute input duration of successful requests in microseconds');
    this.computeInferDuration = counter('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration of successful requests in microseconds');
    this.computeOutputDuration = counter('nv_inference_compute_output_duration_us', 'Cumulative compute output duration of successful requests in microseconds');
    this.pending = new Gauge({
      name: 'nv_inference_pending_request_count',
      help: 'Instantaneous number of requests accepted and awaiting execution',
      labelNames: ['model', 'version'],
      registers,
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
    if (options.collectProcessMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Makes a model version appear in /metrics and in statistics with zeros before it serves a
   * request, as Triton lists every loaded model. Registering twice keeps the values.
   */
  registerModel(model: string, version: string): void {
    if (!this.store.register(model, version)) return;
    const labels = { model, version };
    for (const c of [
      this.success,
      this.inferences,
      this.executions,
      this.requestDuration,
      this.queueDuration,
      this.computeInputDuration,
      this.computeInferDuration,
      this.computeOutputDuration,
    ]) {
      c.inc(labels, 0);
    }
    for (const reason of FAILURE_REASONS) this.failure.inc({ model, version, reason }, 0);
    this.pending.inc(labels, 0);
    this.batchSize.zero(labels);
  }

  /** A request answered successfully; its times are its own, not divided among its batch. */
  requestSucceeded(model: string, version: string, t: RequestTimings): void {
    assertDurations(t);
    this.registerModel(model, version);
    const labels = { model, version };
    this.success.inc(labels);
    this.requestDuration.inc(labels, t.requestUs);
    this.queueDuration.inc(labels, t.queueUs);
    this.computeInputDuration.inc(labels, t.computeInputUs);
    this.computeInferDuration.inc(labels, t.computeInferUs);
    this.computeOutputDuration.inc(labels, t.computeOutputUs);
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

  /** One model execution over `batchSize` requests. */
  batchExecuted(model: string, version: string, batchSize: number, t: BatchTimings): void {
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new RangeError(`Batch size must be an integer >= 1, got ${batchSize}.`);
    }
    assertDurations(t);
    this.registerModel(model, version);
    const labels = { model, version };
    this.executions.inc(labels);
    this.inferences.inc(labels, batchSize);
    this.batchSize.observe(labels, batchSize);
    this.store.recordBatch(model, version, batchSize, t, this.now());
  }

  /** Requests entered (+n) or left (-n) the model's queue and running executions. */
  pendingChanged(model: string, version: string, delta: number): void {
    if (!Number.isInteger(delta)) throw new RangeError(`Pending delta must be an integer, got ${delta}.`);
    this.registerModel(model, version);
    this.pending.inc({ model, version }, delta);
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
 * Durations come from the runtime, never from users, so a bad one is a runtime bug. Checking all of
 * them before anything is counted keeps Prometheus and statistics from diverging half-way
 * (prom-client would throw on a negative counter increment only after earlier counters moved).
 */
function assertDurations(t: object): void {
  for (const [name, value] of Object.entries(t) as [string, unknown][]) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`${name} must be a finite number of microseconds >= 0, got ${String(value)}.`);
    }
  }
}
