import type { BatchPolicy, QueuePolicy } from './batch-policy.js';
import type { ModelConfig, ModelDynamicBatching, ModelQueuePolicy } from './model-config-types.js';

const DEFAULT_QUEUE_POLICY: ModelQueuePolicy = {
  timeout_action: 'REJECT',
  default_timeout_microseconds: 0,
  allow_timeout_override: false,
  max_queue_size: 0,
};

/**
 * Mirrors how Triton's backend_model.cc sets up its scheduler for a model without
 * sequence_batching: with `dynamic_batching`, batches of up to max(1, max_batch_size) under the
 * configured delay and queue policies; without it, the default scheduler, which runs requests one
 * at a time (batch size 1, no delay, one unbounded queue without timeouts). Checking the values
 * (preferred sizes within max_batch_size, priority levels in range) is the batch policy's job.
 */
export function batchPolicyFromConfig(config: Pick<ModelConfig, 'max_batch_size' | 'dynamic_batching'>): BatchPolicy {
  const batching = config.dynamic_batching;
  if (batching === undefined) {
    return {
      maxBatchSize: 1,
      maxQueueDelayUs: 0,
      preferredBatchSizes: [],
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      defaultQueuePolicy: queuePolicyInput(DEFAULT_QUEUE_POLICY),
      priorityQueuePolicy: {},
    };
  }
  const priorityQueuePolicy: Record<number, QueuePolicy> = {};
  for (const [level, policy] of Object.entries(batching.priority_queue_policy)) {
    priorityQueuePolicy[Number(level)] = queuePolicyInput(policy);
  }
  return {
    maxBatchSize: Math.max(1, config.max_batch_size),
    maxQueueDelayUs: batching.max_queue_delay_microseconds,
    preferredBatchSizes: [...batching.preferred_batch_size],
    preserveOrdering: batching.preserve_ordering,
    priorityLevels: batching.priority_levels,
    defaultPriorityLevel: batching.default_priority_level,
    defaultQueuePolicy: queuePolicyInput(batching.default_queue_policy ?? DEFAULT_QUEUE_POLICY),
    priorityQueuePolicy,
  };
}

function queuePolicyInput(policy: ModelQueuePolicy): QueuePolicy {
  return {
    maxQueueSize: policy.max_queue_size,
    defaultTimeoutUs: policy.default_timeout_microseconds,
    allowTimeoutOverride: policy.allow_timeout_override,
    timeoutAction: policy.timeout_action,
  };
}

/** The inverse of batchPolicyFromConfig: the `dynamic_batching` a policy is served with, for a model that has no config file. */
export function dynamicBatchingConfig(policy: BatchPolicy): ModelDynamicBatching {
  return {
    preferred_batch_size: [...policy.preferredBatchSizes],
    max_queue_delay_microseconds: policy.maxQueueDelayUs,
    preserve_ordering: policy.preserveOrdering,
    priority_levels: policy.priorityLevels,
    default_priority_level: policy.defaultPriorityLevel,
    default_queue_policy: queuePolicyConfig(policy.defaultQueuePolicy),
    priority_queue_policy: Object.fromEntries(Object.entries(policy.priorityQueuePolicy).map(([level, p]) => [level, queuePolicyConfig(p)])),
  };
}

function queuePolicyConfig(policy: QueuePolicy): ModelQueuePolicy {
  return {
    timeout_action: policy.timeoutAction,
    default_timeout_microseconds: policy.defaultTimeoutUs,
    allow_timeout_override: policy.allowTimeoutOverride,
    max_queue_size: policy.maxQueueSize,
  };
}
