import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.js';
import { GenerationMetrics } from '../../src/generation/generation-metrics.js';
import { InThreadTarget } from '../../src/generation/in-thread-target.js';
import { IterationScheduler } from '../../src/generation/iteration-scheduler.js';
import type { GenerationChunk } from '../../src/generation/text-generator.js';
import { FakeDecoder, greedy } from '../helpers/fake-decoder.js';

async function value(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name)!;
  const found = (metric.values as { value: number; labels: Record<string, string | number>; metricName?: string }[]).find(
    (v) => (v.metricName === undefined || v.metricName === name || v.metricName === `${name}_count`) && Object.entries(labels).every(([k, l]) => v.labels[k] === l) && (v.metricName === undefined || !v.metricName.endsWith('_bucket')),
  );
  return found?.value ?? 0;
}

describe('GenerationMetrics', () => {
  it("counts what the scheduler did under vLLM's names: tokens, prompts, finishes by reason, preemptions, one TTFT per request", async () => {
    const registry = new Registry();
    const metrics = new GenerationMetrics(registry);
    const runtime = new FakeDecoder();
    let scheduler!: IterationScheduler;
    const gauges = { get pendingCount() { return scheduler.pendingCount; }, get inflightCount() { return scheduler.inflightCount; }, get kvUsage() { return scheduler.kvUsage; } };
    // Three blocks for four sequences of up to 40 tokens: preemptions are certain.
    scheduler = new IterationScheduler('tiny', { maxNumSeqs: 4, maxNumBatchedTokens: 16, kvBlocks: 3 }, { eosTokenIds: [1], maxModelLen: 48 }, new InThreadTarget(runtime), systemClock, metrics.eventsFor('tiny', gauges));
    const prompts = [[2, 3, 4, 5, 6, 7, 8, 9, 10, 11], [12, 13, 14], [15, 16, 17, 18, 19], [20]];
    const controller = new AbortController();
    const all = prompts.map(async (prompt, i) => {
      const sequence = scheduler.sequence({ requestId: String(i), promptTokenIds: prompt, sampling: greedy(i === 3 ? 100 : 30, { ignoreEos: true }), signal: i === 3 ? controller.signal : undefined });
      void scheduler.submit(sequence, {}).catch(() => undefined);
      const chunks: GenerationChunk[] = [];
      for await (const chunk of sequence) {
        chunks.push(chunk);
        if (i === 3 && chunks.length === 5) controller.abort();
      }
      return chunks;
    });
    const results = await Promise.all(all);
    const generated = results.flat().reduce((sum, c) => sum + c.tokens.length, 0);
    const model = { model_name: 'tiny' };
    expect(await value(registry, 'vllm:generation_tokens_total', model)).toBe(generated);
    expect(await value(registry, 'vllm:prompt_tokens_total', model)).toBe(prompts.flat().length);
    expect(await value(registry, 'vllm:request_success_total', { ...model, finished_reason: 'length' })).toBe(3);
    expect(await value(registry, 'vllm:request_success_total', { ...model, finished_reason: 'abort' })).toBe(1);
    expect(scheduler.preemptions).toBeGreaterThan(0);
    expect(await value(registry, 'vllm:num_preemptions_total', model)).toBe(scheduler.preemptions);
    expect(await value(registry, 'vllm:time_to_first_token_seconds', model)).toBe(4);
    expect(await value(registry, 'vllm:inter_token_latency_seconds', model)).toBe(generated - 4);
    expect(await value(registry, 'vllm:e2e_request_latency_seconds', model)).toBe(4);
    expect(await value(registry, 'vllm:request_queue_time_seconds', model)).toBe(4);
    expect(await value(registry, 'vllm:num_requests_running', model)).toBe(0);
    expect(await value(registry, 'vllm:kv_cache_usage_perc', model)).toBe(0);
  });
});
