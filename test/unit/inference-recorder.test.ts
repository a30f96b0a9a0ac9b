import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { installHttpMetrics } from '../../src/metrics/http-metrics.js';
import { BATCH_SIZE_BUCKETS, FAILURE_REASONS, InferenceRecorder, LATENCY_BUCKETS_SECONDS, type FailureReason } from '../../src/metrics/inference-recorder.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the sample lines of Prometheus text exposition format. */
function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

async function scrape(recorder: InferenceRecorder): Promise<Sample[]> {
  return parseSamples(await recorder.registry.metrics());
}

/** The value of the one sample with exactly these labels; undefined when there is none. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string>): number | undefined {
  const found = samples.filter((s) => s.name === name && sameLabels(s.labels, labels));
  expect(found.length).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

async function typesOf(recorder: InferenceRecorder): Promise<Map<string, string>> {
  const text = await recorder.registry.metrics();
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

const mv = { model: 'm', version: '1' };
const request = { requestUs: 1_000, queueUs: 100, computeInputUs: 10, computeInferUs: 500, computeOutputUs: 20 };
const batch = { computeInputUs: 10, computeInferUs: 500, computeOutputUs: 20 };

function quietRecorder(now?: () => number): InferenceRecorder {
  return new InferenceRecorder({ collectProcessMetrics: false, now });
}

describe('InferenceRecorder', () => {
  it('counts inferences per batch element and executions per batch', async () => {
    const r = quietRecorder();
    r.batchExecuted('m', '1', 2, batch);
    r.batchExecuted('m', '1', 4, batch);
    const s = await scrape(r);
    expect(valueOf(s, 'nv_inference_count', mv)).toBe(6);
    expect(valueOf(s, 'nv_inference_exec_count', mv)).toBe(2);
    const stats = r.statistics('m', '1').model_stats[0]!;
    expect(stats.inference_count).toBe(6);
    expect(stats.execution_count).toBe(2);
  });

  it('fills the batch-size histogram buckets', async () => {
    const r = quietRecorder();
    for (const size of [1, 2, 3, 4, 300]) r.batchExecuted('m', '1', size, batch);
    const s = await scrape(r);
    const bucket = (le: string) => valueOf(s, 'serve_fn_batch_size_bucket', { ...mv, le });
    expect(BATCH_SIZE_BUCKETS).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256]);
    expect([...BATCH_SIZE_BUCKETS.map(String), '+Inf'].map(bucket)).toEqual([1, 2, 4, 4, 4, 4, 4, 4, 4, 5]);
    expect(valueOf(s, 'serve_fn_batch_size_sum', mv)).toBe(310);
    expect(valueOf(s, 'serve_fn_batch_size_count', mv)).toBe(5);
  });

  it('adds successful request durations to the µs counters and the ns statistics alike', async () => {
    const r = quietRecorder();
    r.requestSucceeded('m', '1', request);
    r.requestSucceeded('m', '1', { requestUs: 2_000, queueUs: 300, computeInputUs: 1, computeInferUs: 2, computeOutputUs: 3 });
    const s = await scrape(r);
    expect(valueOf(s, 'nv_inference_request_success', mv)).toBe(2);
    expect(valueOf(s, 'nv_inference_request_duration_us', mv)).toBe(3_000);
    expect(valueOf(s, 'nv_inference_queue_duration_us', mv)).toBe(400);
    expect(valueOf(s, 'nv_inference_compute_input_duration_us', mv)).toBe(11);
    expect(valueOf(s, 'nv_inference_compute_infer_duration_us', mv)).toBe(502);
    expect(valueOf(s, 'nv_inference_compute_output_duration_us', mv)).toBe(23);
    expect(r.statistics('m').model_stats[0]!.inference_stats).toEqual({
      success: { count: 2, ns: 3_000_000 },
      fail: { count: 0, ns: 0 },
      queue: { count: 2, ns: 400_000 },
      compute_input: { count: 2, ns: 11_000 },
      compute_infer: { count: 2, ns: 502_000 },
      compute_output: { count: 2, ns: 23_000 },
      cache_hit: { count: 0, ns: 0 },
      cache_miss: { count: 0, ns: 0 },
    });
  });

  it('observes request, queue and compute times of successful requests in latency histograms, in seconds', async () => {
    const r = quietRecorder();
    r.requestSucceeded('m', '1', { ...request, requestUs: 30_000, queueUs: 2_000, computeInferUs: 20_000 });
    r.requestSucceeded('m', '1', { ...request, requestUs: 3_000_000, queueUs: 2_000, computeInferUs: 20_000 });
    r.requestFailed('m', '1', 'BACKEND', { requestUs: 9_000_000 });
    const s = await scrape(r);
    expect(LATENCY_BUCKETS_SECONDS).toContain(0.05);
    expect(valueOf(s, 'serve_fn_inference_request_duration_seconds_count', mv)).toBe(2);
    expect(valueOf(s, 'serve_fn_inference_request_duration_seconds_sum', mv)).toBeCloseTo(3.03);
    expect(valueOf(s, 'serve_fn_inference_request_duration_seconds_bucket', { ...mv, le: '0.05' })).toBe(1);
    expect(valueOf(s, 'serve_fn_inference_request_duration_seconds_bucket', { ...mv, le: '5' })).toBe(2);
    expect(valueOf(s, 'serve_fn_inference_queue_duration_seconds_bucket', { ...mv, le: '0.0025' })).toBe(2);
    expect(valueOf(s, 'serve_fn_inference_compute_infer_duration_seconds_bucket', { ...mv, le: '0.01' })).toBe(0);
    expect(valueOf(s, 'serve_fn_inference_compute_infer_duration_seconds_bucket', { ...mv, le: '0.025' })).toBe(2);
  });

  it("adds Triton's latency summaries only when asked, in µs with Triton's quantiles", async () => {
    const off = quietRecorder();
    off.requestSucceeded('m', '1', request);
    expect(await off.registry.metrics()).not.toContain('_summary_us');

    const on = new InferenceRecorder({ collectProcessMetrics: false, summaryLatencies: true });
    for (let i = 1; i <= 100; i += 1) on.requestSucceeded('m', '1', { ...request, requestUs: i * 1_000 });
    const s = await scrape(on);
    expect(valueOf(s, 'nv_inference_request_summary_us_count', mv)).toBe(100);
    expect(valueOf(s, 'nv_inference_request_summary_us', { ...mv, quantile: '0.99' })).toBeGreaterThan(95_000);
    expect(valueOf(s, 'nv_inference_request_summary_us', { ...mv, quantile: '0.5' })).toBeLessThan(55_000);
    for (const family of ['queue', 'compute_input', 'compute_infer', 'compute_output']) {
      expect(valueOf(s, `nv_inference_${family}_summary_us_count`, mv)).toBe(100);
    }
  });

  it('counts failures by reason and only their request time, in statistics', async () => {
    const r = quietRecorder();
    r.requestFailed('m', '1', 'REJECTED', { requestUs: 40 });
    r.requestFailed('m', '1', 'REJECTED');
    r.requestFailed('m', '1', 'BACKEND', { requestUs: 60, queueUs: 5, computeInferUs: 50 });
    r.requestFailed('m', '1', 'CANCELED', { requestUs: 1 });
    const s = await scrape(r);
    const failures = Object.fromEntries(
      FAILURE_REASONS.map((reason) => [reason, valueOf(s, 'nv_inference_request_failure', { ...mv, reason })]),
    );
    expect(failures).toEqual({ REJECTED: 2, CANCELED: 1, BACKEND: 1, OTHER: 0 });
    expect(valueOf(s, 'nv_inference_request_success', mv)).toBe(0);
    expect(valueOf(s, 'nv_inference_request_duration_us', mv)).toBe(0);
    expect(valueOf(s, 'nv_inference_queue_duration_us', mv)).toBe(0);
    expect(valueOf(s, 'nv_inference_compute_infer_duration_us', mv)).toBe(0);
    const stats = r.statistics('m', '1').model_stats[0]!.inference_stats;
    expect(stats.fail).toEqual({ count: 4, ns: 101_000 });
    expect(stats.queue).toEqual({ count: 0, ns: 0 });
    expect(stats.compute_infer).toEqual({ count: 0, ns: 0 });
  });

  it('moves the pending gauge up and down', async () => {
    const r = quietRecorder();
    r.pendingChanged('m', '1', 3);
    expect(valueOf(await scrape(r), 'nv_inference_pending_request_count', mv)).toBe(3);
    r.pendingChanged('m', '1', -2);
    expect(valueOf(await scrape(r), 'nv_inference_pending_request_count', mv)).toBe(1);
    r.pendingChanged('m', '1', -1);
    expect(valueOf(await scrape(r), 'nv_inference_pending_request_count', mv)).toBe(0);
  });

  it('reads the running sums at every scrape, listing model versions in the order they were registered', async () => {
    const r = quietRecorder();
    r.registerModel('b', '2');
    r.registerModel('a', '1');
    r.registerModel('b', '1');
    r.requestSucceeded('a', '1', { ...request, requestUs: 0.1 });
    const first = await scrape(r);
    expect(valueOf(first, 'nv_inference_request_success', { model: 'a', version: '1' })).toBe(1);
    r.requestSucceeded('a', '1', { ...request, requestUs: 0.2 });
    r.requestSucceeded('b', '1', request);
    const second = await scrape(r);
    expect(valueOf(second, 'nv_inference_request_success', { model: 'a', version: '1' })).toBe(2);
    expect(valueOf(second, 'nv_inference_request_duration_us', { model: 'a', version: '1' })).toBe(0.1 + 0.2);
    expect(valueOf(second, 'nv_inference_request_success', { model: 'b', version: '1' })).toBe(1);
    expect(second.filter((x) => x.name === 'nv_inference_request_success').map((x) => `${x.labels.model}/${x.labels.version}`)).toEqual(['b/2', 'a/1', 'b/1']);
  });

  it('counts instance restarts per instance', async () => {
    const r = quietRecorder();
    r.instanceRestarted('m', '1', 0);
    r.instanceRestarted('m', '1', 1);
    r.instanceRestarted('m', '1', 1);
    const s = await scrape(r);
    expect(valueOf(s, 'serve_fn_instance_restarts_total', { ...mv, instance: '0' })).toBe(1);
    expect(valueOf(s, 'serve_fn_instance_restarts_total', { ...mv, instance: '1' })).toBe(2);
  });

  it('lists a registered model that never ran with zeros in both views', async () => {
    const r = quietRecorder();
    r.registerModel('idle', '3');
    const labels = { model: 'idle', version: '3' };
    const s = await scrape(r);
    for (const name of ['nv_inference_request_success', 'nv_inference_count', 'nv_inference_exec_count', 'nv_inference_request_duration_us', 'nv_inference_pending_request_count', 'serve_fn_batch_size_count']) {
      expect([name, valueOf(s, name, labels)]).toEqual([name, 0]);
    }
    for (const reason of FAILURE_REASONS) expect(valueOf(s, 'nv_inference_request_failure', { ...labels, reason })).toBe(0);
    expect(r.statistics()).toMatchObject({ model_stats: [{ name: 'idle', version: '3', inference_count: 0, execution_count: 0, last_inference: 0, batch_stats: [] }] });
  });

  it('keeps earlier values when a model is registered again', async () => {
    const r = quietRecorder();
    r.batchExecuted('m', '1', 2, batch);
    r.pendingChanged('m', '1', 1);
    r.registerModel('m', '1');
    const s = await scrape(r);
    expect(valueOf(s, 'serve_fn_batch_size_count', mv)).toBe(1);
    expect(valueOf(s, 'nv_inference_pending_request_count', mv)).toBe(1);
    expect(r.statistics().model_stats[0]!.execution_count).toBe(1);
  });

  it('stamps last_inference with the injected clock', () => {
    let now = 1_700_000_000_000;
    const r = quietRecorder(() => now);
    r.batchExecuted('m', '1', 1, batch);
    now += 250;
    r.requestSucceeded('m', '1', request);
    expect(r.statistics().model_stats[0]!.last_inference).toBe(1_700_000_000_250);
  });

  it('keeps models and versions apart and filters statistics', async () => {
    const r = quietRecorder();
    r.batchExecuted('a', '1', 1, batch);
    r.batchExecuted('a', '2', 2, batch);
    r.batchExecuted('b', '1', 4, batch);
    const s = await scrape(r);
    expect(valueOf(s, 'nv_inference_count', { model: 'a', version: '1' })).toBe(1);
    expect(valueOf(s, 'nv_inference_count', { model: 'a', version: '2' })).toBe(2);
    expect(valueOf(s, 'nv_inference_count', { model: 'b', version: '1' })).toBe(4);
    expect(r.statistics().model_stats.map((m) => [m.name, m.version, m.inference_count])).toEqual([['a', '1', 1], ['a', '2', 2], ['b', '1', 4]]);
    expect(r.statistics('a').model_stats.map((m) => m.version)).toEqual(['1', '2']);
    expect(r.statistics('a', '2').model_stats.map((m) => m.inference_count)).toEqual([2]);
    expect(() => r.statistics('c')).toThrow("Request for unknown model: 'c' is not found");
  });

  it('gives two recorders separate state and uses a registry it is handed', async () => {
    const registry = new Registry();
    const first = new InferenceRecorder({ registry, collectProcessMetrics: false });
    const second = quietRecorder();
    first.batchExecuted('m', '1', 2, batch);
    second.batchExecuted('m', '1', 5, batch);
    expect(first.registry).toBe(registry);
    expect(valueOf(parseSamples(await registry.metrics()), 'nv_inference_count', mv)).toBe(2);
    expect(valueOf(await scrape(second), 'nv_inference_count', mv)).toBe(5);
    expect(first.statistics().model_stats[0]!.inference_count).toBe(2);
    expect(second.statistics().model_stats[0]!.inference_count).toBe(5);
  });

  it('collects process CPU and memory metrics unless told not to', async () => {
    const withProcess = await typesOf(new InferenceRecorder());
    expect(withProcess.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(withProcess.get('process_resident_memory_bytes')).toBe('gauge');
    const without = await typesOf(quietRecorder());
    expect(without.has('process_cpu_user_seconds_total')).toBe(false);
    expect(without.has('process_resident_memory_bytes')).toBe(false);
  });

  it('rejects bad input before counting anything', async () => {
    const r = quietRecorder();
    r.registerModel('m', '1');
    const before = await r.registry.metrics();
    expect(() => r.requestSucceeded('m', '1', { ...request, computeOutputUs: -1 })).toThrow(RangeError);
    expect(() => r.requestSucceeded('m', '1', { ...request, queueUs: Number.NaN })).toThrow(RangeError);
    expect(() => r.requestFailed('m', '1', 'OTHER', { requestUs: -5 })).toThrow(RangeError);
    expect(() => r.requestFailed('m', '1', 'TIMEOUT' as FailureReason)).toThrow(RangeError);
    expect(() => r.batchExecuted('m', '1', 0, batch)).toThrow(RangeError);
    expect(() => r.batchExecuted('m', '1', 1.5, batch)).toThrow(RangeError);
    expect(() => r.batchExecuted('m', '1', 2, { ...batch, computeInferUs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
    expect(() => r.pendingChanged('m', '1', 0.5)).toThrow(RangeError);
    expect(await r.registry.metrics()).toBe(before);
    expect(r.statistics().model_stats[0]!.inference_stats.fail.count).toBe(0);
  });
});

/** A recorder with the optional families on, so the docs are checked against every metric. */
function everyMetric(): InferenceRecorder {
  const recorder = new InferenceRecorder({ summaryLatencies: true });
  installHttpMetrics(Fastify(), recorder.registry);
  return recorder;
}

describe('docs/metrics.md', () => {
  const doc = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
  const documented = [...doc.matchAll(/^\| `([a-z_]+)` \| (\w+) \|([^|]*)\|/gm)].map((m) => ({
    name: m[1]!,
    type: m[2]!,
    labels: [...m[3]!.matchAll(/`(\w+)`/g)].map((l) => l[1]!).sort(),
  }));
  const ownMetric = /^(nv_|serve_fn_)/;

  it('documents every nv_* and serve_fn_* metric the registry has, with its type', async () => {
    const registered = [...(await typesOf(everyMetric())).entries()].filter(([name]) => ownMetric.test(name));
    expect(registered.length).toBe(21);
    expect(documented.filter((d) => ownMetric.test(d.name)).map((d) => [d.name, d.type]).sort()).toEqual(registered.sort());
  });

  it('lists only metrics that exist, with their types', async () => {
    const types = await typesOf(everyMetric());
    expect(documented.length).toBeGreaterThan(12);
    for (const d of documented) expect([d.name, types.get(d.name)]).toEqual([d.name, d.type]);
  });

  it('gives each model metric the labels it is exported with', async () => {
    const r = new InferenceRecorder({ collectProcessMetrics: false, summaryLatencies: true });
    r.requestSucceeded('m', '1', request);
    r.requestFailed('m', '1', 'OTHER');
    r.batchExecuted('m', '1', 1, batch);
    r.pendingChanged('m', '1', 1);
    r.instanceRestarted('m', '1', 0);
    r.trackLiveSequences('m', '1', () => 1);
    const samples = await scrape(r);
    for (const d of documented.filter((x) => ownMetric.test(x.name))) {
      const ofMetric = samples.filter((s) => s.name === d.name || ((d.type === 'histogram' || d.type === 'summary') && s.name.startsWith(`${d.name}_`)));
      expect(ofMetric.length).toBeGreaterThan(0);
      for (const s of ofMetric) {
        const labels = Object.keys(s.labels).filter((k) => k !== 'le' && k !== 'quantile').sort();
        expect([s.name, labels]).toEqual([s.name, d.labels]);
      }
    }
  });
});
