import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { batchPolicyFromConfig, dynamicBatchingConfig } from '../../src/spec/batch-policy-from-config.js';
import type { BatchPolicy } from '../../src/spec/batch-policy.js';
import { parseModelConfig, type ModelConfig } from '../../src/model-repository/model-config.js';
import { normalizeBatchPolicy } from '../../src/spec/batch-policy.js';

const FIXTURES = new URL('../fixtures/pbtxt/', import.meta.url);

function fixture(name: string): ModelConfig {
  return parseModelConfig(readFileSync(new URL(`${name}.pbtxt`, FIXTURES), 'utf8'), `${name}.pbtxt`).config;
}

function config(source: string): ModelConfig {
  return parseModelConfig(source, 'config.pbtxt').config;
}

const NO_QUEUE_LIMITS = { maxQueueSize: 0, defaultTimeoutUs: 0, allowTimeoutOverride: false, timeoutAction: 'REJECT' } as const;

describe('batchPolicyFromConfig', () => {
  it('maps dynamic batching with priority queues field by field', () => {
    expect(batchPolicyFromConfig(fixture('dynamic_batching_priority'))).toStrictEqual<BatchPolicy>({
      maxBatchSize: 16,
      maxQueueDelayUs: 100,
      preferredBatchSizes: [4, 8],
      preserveOrdering: false,
      priorityLevels: 2,
      defaultPriorityLevel: 2,
      defaultQueuePolicy: { maxQueueSize: 32, defaultTimeoutUs: 5000, allowTimeoutOverride: true, timeoutAction: 'REJECT' },
      priorityQueuePolicy: {
        1: { maxQueueSize: 8, defaultTimeoutUs: 1000, allowTimeoutOverride: false, timeoutAction: 'DELAY' },
        2: { maxQueueSize: 64, defaultTimeoutUs: 0, allowTimeoutOverride: false, timeoutAction: 'REJECT' },
      },
    });
  });

  it('maps `dynamic_batching { }` to batches of max_batch_size with no delay and no queue limits', () => {
    expect(batchPolicyFromConfig(config('max_batch_size: 8\ndynamic_batching { }'))).toStrictEqual<BatchPolicy>({
      maxBatchSize: 8,
      maxQueueDelayUs: 0,
      preferredBatchSizes: [8],
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      defaultQueuePolicy: NO_QUEUE_LIMITS,
      priorityQueuePolicy: {},
    });
  });

  it('runs one request at a time when there is no dynamic_batching, as Triton default scheduler does', () => {
    expect(batchPolicyFromConfig(fixture('simple'))).toStrictEqual<BatchPolicy>({
      maxBatchSize: 1,
      maxQueueDelayUs: 0,
      preferredBatchSizes: [],
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      defaultQueuePolicy: NO_QUEUE_LIMITS,
      priorityQueuePolicy: {},
    });
  });

  it('uses batch size 1 for a dynamic batcher on a model with max_batch_size 0', () => {
    const policy = batchPolicyFromConfig(config('dynamic_batching { max_queue_delay_microseconds: 500 preserve_ordering: true }'));
    expect([policy.maxBatchSize, policy.maxQueueDelayUs, policy.preserveOrdering, policy.preferredBatchSizes]).toStrictEqual([1, 500, true, []]);
  });

  it('copies lists so the policy does not alias the configuration', () => {
    const source = fixture('dynamic_batching_priority');
    const policy = batchPolicyFromConfig(source);
    (policy.preferredBatchSizes as number[]).push(16);
    expect(source.dynamic_batching?.preferred_batch_size).toStrictEqual([4, 8]);
  });

  it('is accepted by the runtime batch policy, keeping Triton per-level policies whole', () => {
    const policy = normalizeBatchPolicy(batchPolicyFromConfig(fixture('dynamic_batching_priority')), 'priority_identity');
    expect(policy.priorityQueuePolicy[2]).toStrictEqual({ maxQueueSize: 64, defaultTimeoutUs: 0, allowTimeoutOverride: false, timeoutAction: 'REJECT' });
    expect(policy.defaultPriorityLevel).toBe(2);
  });
});

describe('dynamicBatchingConfig', () => {
  it('is the inverse of batchPolicyFromConfig: the config it writes reads back as the same policy', () => {
    const policy = batchPolicyFromConfig(fixture('dynamic_batching_priority'));
    const written = { max_batch_size: policy.maxBatchSize, dynamic_batching: dynamicBatchingConfig(policy) };
    expect(batchPolicyFromConfig(written)).toEqual(policy);
  });
});
