import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ModelMetricFamilies } from '../../src/metrics/model-metric-families.js';

describe('ModelMetricFamilies', () => {
  it('registers counters and histograms on the registry, labelled by the model first, then by their own labels', async () => {
    const registry = new Registry();
    const families = new ModelMetricFamilies(registry, 'model_name');
    families.counter('done_total', 'Requests done.', ['finished_reason']).inc({ model_name: 'm', finished_reason: 'stop' }, 2);
    families.histogram('wait_seconds', 'Seconds waited.', [0.5, 1]).observe({ model_name: 'm' }, 0.7);
    const text = await registry.metrics();
    expect(text).toContain('# HELP done_total Requests done.\n# TYPE done_total counter\ndone_total{model_name="m",finished_reason="stop"} 2');
    expect(text).toContain('wait_seconds_bucket{le="0.5",model_name="m"} 0\nwait_seconds_bucket{le="1",model_name="m"} 1');
  });

  it('sets a gauge as things change, or reads it per model at each scrape', async () => {
    const registry = new Registry();
    const families = new ModelMetricFamilies(registry, 'model');
    families.gauge('queued', 'Queued inputs.').set({ model: 'a' }, 3);
    const running = new Map([['a', 1], ['b', 2]]);
    families.gauge('running', 'Running requests.', (set) => running.forEach((value, model) => set(model, value)));
    expect(await registry.metrics()).toContain('queued{model="a"} 3');
    running.set('b', 5);
    const text = await registry.metrics();
    expect(text).toContain('running{model="a"} 1\nrunning{model="b"} 5');
  });
});
