import type { ModelDefinition } from '../definition/model-definition.js';
import { createError, type ServeFnError } from '../errors/index.js';
import { dynamicBatchingConfig } from '../model-repository/batch-policy-from-config.js';
import type { ModelConfig, ModelInstanceGroup } from '../model-repository/model-config-types.js';
import type { BatchPolicy } from '../runtime/batch-policy.js';
import type { ModelRuntime } from '../runtime/model-runtime.js';
import type { InferenceModel, InferenceModelInfo, InferResponse, ModelRepository, RepositoryIndexEntry } from './inference-model.js';

/** What a decorated model is called in `platform` and `backend`: it runs serve-fn's own runtime, not a Triton backend. */
export const DECORATED_PLATFORM = 'serve-fn';

export interface DecoratedModelOptions {
  /** Why the server admits no requests now (its phase: starting, draining, stopped), or undefined while it serves. */
  readonly notServing: () => string | undefined;
}

/**
 * A `@Model` class as the KServe v2 protocol sees it: listed, with metadata, readiness, a
 * Triton-shaped configuration and the statistics its runtime records. It declares no tensors, so
 * it runs no protocol inference; its own endpoints serve it.
 */
export class DecoratedModel implements InferenceModel {
  readonly info: InferenceModelInfo;

  constructor(
    readonly runtime: ModelRuntime,
    private readonly options: DecoratedModelOptions,
  ) {
    const def = runtime.definition;
    const config = decoratedModelConfig(def);
    this.info = {
      name: def.name,
      version: def.version,
      platform: DECORATED_PLATFORM,
      inputs: [],
      outputs: [],
      maxBatchSize: config.max_batch_size,
      config,
      decoupled: false,
    };
  }

  /** Ready while the server admits requests and an instance is left to run them (not every one held down past its restart limit). */
  ready(): boolean {
    return this.options.notServing() === undefined && this.runtime.available;
  }

  async infer(): Promise<InferResponse> {
    throw this.noTensorInterface();
  }

  /** The repository index entry: READY, or UNAVAILABLE with why. */
  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    const phase = this.options.notServing();
    if (phase !== undefined) return { name, version, state: 'UNAVAILABLE', reason: `server is ${phase}` };
    if (!this.runtime.available) return { name, version, state: 'UNAVAILABLE', reason: this.runtime.unavailableError().message };
    return { name, version, state: 'READY' };
  }

  noTensorInterface(): ServeFnError {
    return createError('SF_ERR_MODEL_NO_TENSOR_INTERFACE', this.info.name, endpointNames(this.runtime.definition).join(', '));
  }
}

/**
 * The model an inference request (infer, generate; HTTP or gRPC) runs on. A decorated model is
 * refused here, before the request's tensors are decoded against a model that declares none (which
 * would name the first input as unexpected instead of what is missing).
 */
export function inferenceTarget(repository: ModelRepository, name: string, version?: string): InferenceModel {
  const model = repository.get(name, version);
  if (model instanceof DecoratedModel) throw model.noTensorInterface();
  return model;
}

/** Whether the protocol can run inference requests on `model` (the OpenAPI examples list only these). */
export function acceptsInferRequests(model: InferenceModel): boolean {
  return !(model instanceof DecoratedModel);
}

type DecoratedModelConfig = Pick<ModelConfig, 'name' | 'platform' | 'backend' | 'version_policy' | 'max_batch_size' | 'input' | 'output' | 'instance_group' | 'dynamic_batching' | 'parameters'>;

/**
 * Triton's ModelConfig JSON (model_config.proto) of a decorated model, derived from its decorators:
 * @Instances is the instance group, the endpoint with the largest @Batch gives max_batch_size and
 * dynamic_batching (Triton has one scheduler per model, serve-fn one batcher per endpoint), and
 * `parameters.endpoints` names the routes that serve it.
 */
export function decoratedModelConfig(def: ModelDefinition): DecoratedModelConfig {
  const largest = def.endpoints.reduce<BatchPolicy | undefined>((best, e) => (e.batch && (!best || e.batch.maxBatchSize > best.maxBatchSize) ? e.batch : best), undefined);
  return {
    name: def.name,
    platform: DECORATED_PLATFORM,
    backend: DECORATED_PLATFORM,
    version_policy: { specific: { versions: /^\d+$/.test(def.version) ? [Number(def.version)] : [] } },
    max_batch_size: largest?.maxBatchSize ?? 0,
    input: [],
    output: [],
    instance_group: [instanceGroup(def)],
    ...(largest ? { dynamic_batching: dynamicBatchingConfig(largest) } : {}),
    parameters: { endpoints: { string_value: endpointNames(def).join(', ') } },
  };
}

function endpointNames(def: ModelDefinition): string[] {
  return [...def.endpoints.map((e) => `${e.httpMethod} ${e.path}`), ...def.sockets.map((s) => `WEBSOCKET ${s.path}`)];
}

/** Triton has no NPU kind: KIND_MODEL is its kind for a model that places itself on its devices. */
function instanceGroup(def: ModelDefinition): ModelInstanceGroup {
  const { count, kind, devices } = def.instances;
  const tritonKind = kind === 'gpu' ? 'KIND_GPU' : kind === 'npu' ? 'KIND_MODEL' : 'KIND_CPU';
  return { name: def.name, count, kind: tritonKind, gpus: kind === 'gpu' ? [...devices] : [] };
}
