import type { ModelDefinition } from '../definition/model-definition.js';
import { createError, type ServeFnError } from '../errors/index.js';
import { dynamicBatchingConfig } from '../spec/batch-policy-from-config.js';
import { toTensorSpec } from '../spec/config-tensor.js';
import type { ModelConfig, ModelInput, ModelInstanceGroup, ModelOutput } from '../spec/model-config-types.js';
import type { BatchPolicy } from '../spec/batch-policy.js';
import type { ModelRuntime } from './model-runtime.js';
import { toConfigDatatype } from '../tensor/datatype-info.js';
import type { InferenceModel, InferenceModelInfo, InferRequest, InferResponse, ModelRepository, RepositoryIndexEntry } from './inference-model.js';
import { checkNoEmptyDims, validateInferRequest } from './request-validation.js';
import type { ConfigTensor } from '../spec/config-tensor.js';

/** What a decorated model is called in `platform` and `backend`: it runs serve-fn's own runtime, not a Triton backend. */
const DECORATED_PLATFORM = 'serve-fn';

export interface DecoratedModelOptions {
  /** Why the server admits no requests now (its phase: starting, draining, stopped), or undefined while it serves. */
  readonly notServing: () => string | undefined;
}

/**
 * A `@Model` class as the KServe v2 protocol sees it: listed, with metadata, readiness, a
 * Triton-shaped configuration and the statistics its runtime records. With @Tensors it runs
 * inference requests, checked as a repository model's are, on the same runtime as its endpoints;
 * without, infer answers SF_ERR_MODEL_NO_TENSOR_INTERFACE and its own endpoints serve it.
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
      inputs: def.tensors?.inputs.map(toTensorSpec) ?? [],
      outputs: def.tensors?.outputs.map(toTensorSpec) ?? [],
      maxBatchSize: config.max_batch_size,
      config,
      decoupled: false,
    };
  }

  /** Ready while the server admits requests and an instance is left to run them (not every one held down past its restart limit). */
  ready(): boolean {
    return this.options.notServing() === undefined && this.runtime.engine.available;
  }

  /** Whether the class declares @Tensors, so the protocol can run inference requests on it. */
  get hasTensorInterface(): boolean {
    return this.runtime.definition.tensors !== undefined;
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    if (!this.hasTensorInterface) throw this.noTensorInterface();
    const { name, version } = this.info;
    const validated = validateInferRequest(this.info, request);
    checkNoEmptyDims(this.info, validated, this.runtime.definition.tensors!.inputs);
    const result = await this.runtime.submitTensors(validated, { priority: request.priority, timeoutUs: request.timeoutUs, signal: request.signal, trace: request.trace });
    return { modelName: name, modelVersion: version, id: request.id, outputs: result.outputs, parameters: result.parameters };
  }

  /** The repository index entry: READY, or UNAVAILABLE with why. */
  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    const phase = this.options.notServing();
    if (phase !== undefined) return { name, version, state: 'UNAVAILABLE', reason: `server is ${phase}` };
    if (!this.runtime.engine.available) return { name, version, state: 'UNAVAILABLE', reason: this.runtime.engine.unavailableError().message };
    return { name, version, state: 'READY' };
  }

  noTensorInterface(): ServeFnError {
    return createError('SF_ERR_MODEL_NO_TENSOR_INTERFACE', this.info.name, endpointNames(this.runtime.definition).join(', '));
  }
}

/**
 * The model an inference request (infer, generate; HTTP or gRPC) runs on. A decorated model without
 * @Tensors is refused here, before the request's tensors are decoded against a model that declares
 * none (which would name the first input as unexpected instead of what is missing).
 */
export function inferenceTarget(repository: ModelRepository, name: string, version?: string): InferenceModel {
  const model = repository.get(name, version);
  if (model instanceof DecoratedModel && !model.hasTensorInterface) throw model.noTensorInterface();
  return model;
}

/** Whether the protocol can run inference requests on `model` (the OpenAPI examples list only these). */
export function acceptsInferRequests(model: InferenceModel): boolean {
  return !(model instanceof DecoratedModel) || model.hasTensorInterface;
}

type DecoratedModelConfig = Pick<ModelConfig, 'name' | 'platform' | 'backend' | 'version_policy' | 'max_batch_size' | 'input' | 'output' | 'instance_group' | 'dynamic_batching' | 'parameters'>;

/**
 * Triton's ModelConfig JSON (model_config.proto) of a decorated model, derived from its decorators:
 * @Instances is the instance group, @Tensors the inputs, outputs and max_batch_size, and @Batch on
 * `execute` the dynamic_batching. A class without @Tensors takes max_batch_size and dynamic_batching
 * from the endpoint with the largest @Batch (Triton has one scheduler per model, serve-fn one
 * batcher per endpoint). `parameters.endpoints` names the routes that serve it.
 */
export function decoratedModelConfig(def: ModelDefinition): DecoratedModelConfig {
  const largest = def.endpoints.reduce<BatchPolicy | undefined>((best, e) => (e.batch && (!best || e.batch.maxBatchSize > best.maxBatchSize) ? e.batch : best), undefined);
  const tensors = def.tensors;
  const batching = tensors ? tensors.batch : largest;
  return {
    name: def.name,
    platform: DECORATED_PLATFORM,
    backend: DECORATED_PLATFORM,
    version_policy: { specific: { versions: /^\d+$/.test(def.version) ? [Number(def.version)] : [] } },
    max_batch_size: tensors ? tensors.maxBatchSize : (largest?.maxBatchSize ?? 0),
    input: tensors?.inputs.map(configInput) ?? [],
    output: tensors?.outputs.map(configOutput) ?? [],
    instance_group: [instanceGroup(def)],
    ...(batching ? { dynamic_batching: dynamicBatchingConfig(batching) } : {}),
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

function configInput(tensor: ConfigTensor): ModelInput {
  return {
    name: tensor.name, data_type: toConfigDatatype(tensor.datatype), format: 'FORMAT_NONE', dims: [...tensor.dims],
    is_shape_tensor: false, allow_ragged_batch: false, optional: tensor.optional,
  };
}

function configOutput(tensor: ConfigTensor): ModelOutput {
  return { name: tensor.name, data_type: toConfigDatatype(tensor.datatype), dims: [...tensor.dims], label_filename: '', is_shape_tensor: false };
}
