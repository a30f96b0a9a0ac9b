import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PythonCustomMetrics } from '../../src/metrics/python-custom-metrics.js';

describe('PythonCustomMetrics', () => {
  it('exports counters, gauges and histograms with the labels of their Metric, shared by family name', async () => {
    const registry = new Registry();
    const metrics = PythonCustomMetrics.of(registry);
    expect(PythonCustomMetrics.of(registry)).toBe(metrics);
    metrics.family({ name: 'latency_ns', description: 'time spent', kind: 'counter' });
    metrics.family({ name: 'latency_ns', description: 'ignored: the first description stays', kind: 'counter' });
    metrics.apply({ family: 'latency_ns', labels: { model: 'm' }, op: 'create', value: 0 });
    metrics.apply({ family: 'latency_ns', labels: { model: 'm' }, op: 'increment', value: 5 });
    metrics.apply({ family: 'latency_ns', labels: { model: 'm' }, op: 'increment', value: 2 });
    metrics.family({ name: 'queue', description: 'items', kind: 'gauge' });
    metrics.apply({ family: 'queue', labels: {}, op: 'set', value: 3 });
    metrics.family({ name: 'sizes', description: 'batch sizes', kind: 'histogram' });
    metrics.apply({ family: 'sizes', labels: {}, op: 'create', value: 0, buckets: [1, 4] });
    metrics.apply({ family: 'sizes', labels: {}, op: 'observe', value: 2 });
    const text = await registry.metrics();
    expect(text).toContain('# HELP latency_ns time spent\n# TYPE latency_ns counter\nlatency_ns{model="m"} 7');
    expect(text).toContain('queue 3');
    expect(text).toContain('sizes_bucket{le="1"} 0\nsizes_bucket{le="4"} 1');
  });

  it('refuses a metric of a family never created', () => {
    expect(() => PythonCustomMetrics.of(new Registry()).apply({ family: 'nope', labels: {}, op: 'increment', value: 1 })).toThrow("metric family 'nope' was not created");
  });
});
