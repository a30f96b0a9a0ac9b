import { createError, ServeFnError } from '../errors/index.js';
import { SequenceScheduler } from '../engine/sequence-scheduler.js';
import type { StreamRequests } from '../inference/decoupled-model-version.js';
import type { ValidatedRequest, InstanceEngine, QueuedTensorRequest } from '../engine/instance-engine.js';
import type { LengthBatching } from '../engine/length-batching.js';
import { refuseSequenceParameters } from '../engine/sequence-parameters.js';
import type { TensorRequests } from '../inference/tensor-model-version.js';
import type { TensorWireResult } from '../wire/tensor-model-plan.js';
import { normalizeBatchPolicy, type BatchPolicy } from '../spec/batch-policy.js';
import type { PoolEvents } from '../engine/instance-pool.js';
import { now } from '../wire/epoch-time.js';
import { tensorCall } from '../wire/wire-format.js';
import { batchPolicyFromConfig } from '../spec/batch-policy-from-config.js';
import type { ModelConfig } from './model-config.js';
import { sequenceBatchingPlan } from './sequence-batching-config.js';

/** The one scheduler of a repository model version: its requests answer once, or as a stream (decoupled). */
export type ConfiguredScheduler = { readonly decoupled: false; readonly requests: TensorRequests } | { readonly decoupled: true; readonly streams: StreamRequests };

/**
 * Registers the scheduler `config` asks for on the version's engine, as Triton's
 * SetConfiguredScheduler (core/src/backend_model.cc) picks one scheduler per model:
 * `sequence_batching` → SequenceScheduler; otherwise a DynamicBatcher under batchPolicyFromConfig
 * (with `dynamic_batching` its batches and queue policy, without it one request at a time). A
 * decoupled model's requests go through that same queue policy, each holding an instance for its
 * stream (InstanceEngine.streamBatcher), as Triton's decoupled requests go through the model's one
 * scheduler with its `default_queue_policy`.
 */
export function schedulerFor(config: ModelConfig, version: string, engine: InstanceEngine, log: PoolEvents['onLog'], byLength?: LengthBatching): ConfiguredScheduler {
  const { name } = config;
  const sequence = sequenceBatchingPlan(config);
  if (sequence) {
    const scheduler = new SequenceScheduler(engine, engine.instanceCount, { name, maxBatchSize: config.max_batch_size, idleUs: sequence.idleUs, controls: sequence.controls, log, ...(sequence.direct ? { direct: sequence.direct } : {}) });
    return { decoupled: false, requests: scheduler };
  }
  const owner = `${name} version ${version}`;
  const policy = batchPolicy(config, owner);
  if (config.model_transaction_policy?.decoupled === true) {
    const streams = engine.streamBatcher<QueuedTensorRequest>(owner, policy, (queued) => tensorCall([queued.request.wire]), { countRun: true });
    return {
      decoupled: true,
      streams: {
        async openStream(request, options = {}) {
          refuseSequenceParameters(name, request.wire.parameters);
          return engine.submit(streams, { request, submittedMs: now() }, options);
        },
      },
    };
  }
  const batcher = engine.tensorBatcher(owner, policy, byLength);
  return {
    decoupled: false,
    requests: {
      async submit(request: ValidatedRequest, options = {}) {
        refuseSequenceParameters(name, request.wire.parameters);
        return engine.submit(batcher, { request, submittedMs: now() }, options);
      },
    },
  };
}

function batchPolicy(config: ModelConfig, owner: string): BatchPolicy {
  try {
    return normalizeBatchPolicy(batchPolicyFromConfig(config), owner);
  } catch (err) {
    if (err instanceof ServeFnError) throw createError('SF_ERR_CONFIG_INVALID', config.name, `dynamic_batching: ${err.message}`);
    throw err;
  }
}
