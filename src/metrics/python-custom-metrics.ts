import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

type Family = { readonly name: string; readonly description: string; readonly kind: 'counter' | 'gauge' | 'histogram' };
type MetricOp = { readonly family: string; readonly labels: Readonly<Record<string, string>>; readonly op: 'create' | 'increment' | 'set' | 'observe'; readonly value: number; readonly buckets?: readonly number[] };

/**
 * The custom metrics of Python backend models (pb_utils.MetricFamily / Metric, python_backend's
 * "Custom Metrics"), exported on /metrics through prom-client beside serve-fn's own. A family is one
 * prom-client metric whose label names are those of its first Metric; as in Triton, a family name
 * used twice (by every instance of a model) is the same family.
 */
export class PythonCustomMetrics {
  private static readonly byRegistry = new WeakMap<Registry, PythonCustomMetrics>();
  private readonly families = new Map<string, Family>();
  private readonly metrics = new Map<string, Counter | Gauge | Histogram>();

  private constructor(private readonly registry: Registry) {}

  /** The one instance for `registry`, so every model's families share their names. */
  static of(registry: Registry): PythonCustomMetrics {
    let found = PythonCustomMetrics.byRegistry.get(registry);
    if (!found) PythonCustomMetrics.byRegistry.set(registry, (found = new PythonCustomMetrics(registry)));
    return found;
  }

  family(family: Family): void {
    if (!this.families.has(family.name)) this.families.set(family.name, family);
  }

  /** Applies one Metric call; a call that does not fit its family (another kind, other labels) throws. */
  apply(op: MetricOp): void {
    const metric = this.metricFor(op);
    const labelled = Object.keys(op.labels).length > 0;
    if (op.op === 'create') {
      // A metric exists from its creation at 0, as Triton's does.
      if (metric instanceof Histogram) return;
      if (labelled) metric.labels(op.labels).inc(0);
      else metric.inc(0);
    } else if (op.op === 'increment' && !(metric instanceof Histogram)) {
      if (labelled) metric.labels(op.labels).inc(op.value);
      else metric.inc(op.value);
    } else if (op.op === 'set' && metric instanceof Gauge) {
      if (labelled) metric.labels(op.labels).set(op.value);
      else metric.set(op.value);
    } else if (op.op === 'observe' && metric instanceof Histogram) {
      if (labelled) metric.labels(op.labels).observe(op.value);
      else metric.observe(op.value);
    }
  }

  private metricFor(op: MetricOp): Counter | Gauge | Histogram {
    const existing = this.metrics.get(op.family);
    if (existing) return existing;
    const family = this.families.get(op.family);
    if (!family) throw new Error(`metric family '${op.family}' was not created`);
    const config = { name: family.name, help: family.description || family.name, labelNames: Object.keys(op.labels), registers: [this.registry] };
    const metric = family.kind === 'counter' ? new Counter(config) : family.kind === 'gauge' ? new Gauge(config) : new Histogram({ ...config, ...(op.buckets ? { buckets: [...op.buckets] } : {}) });
    this.metrics.set(op.family, metric);
    return metric;
  }
}
