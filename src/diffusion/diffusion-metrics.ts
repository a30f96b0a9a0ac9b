import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ModelMetricFamilies } from '../metrics/model-metric-families.js';
import type { StepObserver } from './step-scheduler.js';

/** Seconds buckets of vLLM-Omni's metrics (SECONDS_FAST_BUCKETS, 1 ms to 60 s; docs/design/metrics.md there). */
const SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64];

/**
 * The serve_fn_diffusion_* families, one set per server, labelled by the pipeline's `model`; each
 * stage's own nv_* statistics come from its engine as any model's do.
 */
export class DiffusionMetrics {
  private readonly stepBatch: Histogram<'model'>;
  private readonly stepSeconds: Histogram<'model'>;
  private readonly queueSeconds: Histogram<'model'>;
  private readonly e2eSeconds: Histogram<'model'>;
  private readonly running: Gauge<'model'>;
  private readonly steps: Counter<'model'>;
  private readonly aborted: Counter<'model'>;

  constructor(registry: Registry) {
    const families = new ModelMetricFamilies(registry, 'model');
    this.stepBatch = families.histogram('serve_fn_diffusion_step_batch_size', 'Rows per batched denoiser call (two per request with classifier-free guidance)', BATCH_BUCKETS);
    this.stepSeconds = families.histogram('serve_fn_diffusion_step_seconds', 'Duration of one batched denoiser step', SECONDS_BUCKETS);
    this.queueSeconds = families.histogram('serve_fn_diffusion_queue_seconds', 'Wait before a request joined the running set', SECONDS_BUCKETS);
    this.e2eSeconds = families.histogram('serve_fn_diffusion_e2e_seconds', 'Prompt to decoded image, per image', SECONDS_BUCKETS);
    this.running = families.gauge('serve_fn_diffusion_requests_running', 'Requests in the denoiser\'s running set');
    this.steps = families.counter('serve_fn_diffusion_steps_total', 'Denoising steps taken, counted per request');
    this.aborted = families.counter('serve_fn_diffusion_aborted_total', 'Requests cancelled (client gone, job deleted) before their last step');
  }

  /** The step scheduler's observer for pipeline `model`. */
  observer(model: string): StepObserver {
    const labels = { model };
    return {
      admitted: (_work, queuedUs) => this.queueSeconds.observe(labels, queuedUs / 1e6),
      stepped: (rows, seconds, requests) => {
        this.stepBatch.observe(labels, rows);
        this.stepSeconds.observe(labels, seconds);
        this.steps.inc(labels, requests);
      },
      aborted: () => this.aborted.inc(labels),
      runningChanged: (running) => this.running.set(labels, running),
    };
  }

  finished(model: string, seconds: number): void {
    this.e2eSeconds.observe({ model }, seconds);
  }
}
