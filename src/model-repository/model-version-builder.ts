import { pathToFileURL } from 'node:url';
import type { BackendMetadata, DeviceSpec } from '../backends/backend.js';
import { backendForFile } from '../backends/backend-for-file.js';
import type { ModelContextData } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import { DecoupledModelVersion } from '../inference/decoupled-model-version.js';
import { EnsembleModel, type ModelResolver } from '../inference/ensemble-model.js';
import type { InferenceModelInfo } from '../inference/inference-model.js';
import type { ServedModel } from '../inference/served-model.js';
import type { TensorModelKind, TensorModelPlan } from '../wire/tensor-model-plan.js';
import { controlInputSpecs } from '../engine/sequence-controls.js';
import { TensorModelVersion } from '../inference/tensor-model-version.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import type { InferCall } from '../instance/context-services.js';
import { InstanceEngine } from '../engine/instance-engine.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import type { InstanceEvents, ModelInstance } from '../engine/model-instance.js';
import { WorkerInstance } from '../engine/worker-instance.js';
import { autoCompleteConfig, checkConfigAgainstModel, needsAutoComplete } from './config-autocomplete.js';
import { schedulerFor } from './configured-scheduler.js';
import { configTensors, type ConfigTensors } from './config-tensors.js';
import { toTensorSpec } from '../spec/config-tensor.js';
import { planEnsemble } from './ensemble-validation.js';
import { buildPythonModel } from './python-model.js';
import { geLoadOptions } from './ge-parameters.js';
import { instancePlacements, restartPolicyFromParameters, sessionOptionsFromParameters, type InstancePlacement } from './instance-placement.js';
import { modelConfigToJson, type ModelConfig } from './model-config.js';
import type { ModelSource } from './model-source.js';
import { sequenceBatchingPlan } from './sequence-batching-config.js';
import { warmupRuns } from './warmup-requests.js';
import type { ModelLogger } from '../instance/instance-logger.js';

export type TensorInstanceFactory = (index: number, plan: TensorModelPlan, context: ModelContextData, events: InstanceEvents) => ModelInstance;

export interface VersionBuilderContext {
  readonly recorder: InferenceRecorder;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** `ctx.infer` of model.ts instances (BLS). */
  readonly infer: InferCall;
  /** Served models by name and version, for ensemble steps; throws SF_ERR_MODEL_UNKNOWN / _VERSION_UNKNOWN. */
  readonly resolve: ModelResolver;
  readonly restartPolicy?: RestartPolicy;
  /** Most instances of one model version; DEFAULT_MAX_INSTANCES when unset. */
  readonly maxInstances?: number;
  /** Makes each instance; worker threads by default. */
  readonly instanceFactory?: TensorInstanceFactory;
  /** The server's logger, for model.ts instances' ctx.logger. */
  readonly logger?: ModelLogger;
}

/**
 * Turns a model source into its served versions, not yet loaded. For model files, the file's own
 * inputs and outputs complete and check the configuration (config-autocomplete.ts); ensembles are
 * checked against the step models served now.
 */
export async function buildModelVersions(source: ModelSource, ctx: VersionBuilderContext): Promise<ServedModel[]> {
  const versions: ServedModel[] = [];
  for (const { version, file } of source.versions) {
    if (source.kind === 'ensemble' || file === undefined) versions.push(buildEnsemble(source, version, ctx));
    else if (source.kind === 'python') versions.push(await buildPythonModel(source, version, file, ctx));
    else versions.push(await buildTensorModel(source, source.kind, version, file, ctx));
  }
  return versions;
}

function buildEnsemble(source: ModelSource, version: string, ctx: VersionBuilderContext): ServedModel {
  const info = infoFor(source.config, version);
  const lookup = (name: string, stepVersion?: string): InferenceModelInfo | undefined => {
    try {
      return ctx.resolve(name, stepVersion).info;
    } catch {
      return undefined;
    }
  };
  return new EnsembleModel(info, planEnsemble(info, source.config.ensemble_scheduling, lookup), ctx.resolve, ctx.recorder);
}

async function buildTensorModel(source: ModelSource, kind: TensorModelKind, version: string, file: string, ctx: VersionBuilderContext): Promise<ServedModel> {
  const { name } = source;
  const placements = instancePlacements(source.config, kind, ctx.maxInstances);
  let config = source.config;
  if (kind === 'module') {
    if (needsAutoComplete(config)) throw createError('SF_ERR_CONFIG_INVALID', name, 'a model.ts / model.js model declares its input and output tensors in config.pbtxt');
  } else if (kind === 'onnx' || kind === 'npu_ge' || needsAutoComplete(config)) {
    // An .om file is only opened here when its configuration needs completing: that takes an NPU.
    // An ONNX file is read on the CPU, for npu_ge too (readMetadata).
    const metadata = withoutControlInputs(await readMetadata(file, kind, placements[0]), config);
    config = autoCompleteConfig(config, metadata, file);
    checkConfigAgainstModel(config, metadata, file);
  }
  const tensors = configTensors(config);
  const sequence = sequenceBatchingPlan(config);
  const plan: TensorModelPlan = {
    kind, file, maxBatchSize: config.max_batch_size, outputs: tensors.outputs,
    inputs: sequence ? [...tensors.inputs, ...controlInputSpecs(sequence.controls)] : tensors.inputs,
    sessionOptions: kind === 'onnx' ? sessionOptionsFromParameters(config) : kind === 'npu_ge' ? geLoadOptions(config) : {},
  };
  const info = infoFor(config, version, tensors);
  const makeInstance = ctx.instanceFactory ?? workerInstanceFactory(ctx.infer, ctx.logger);
  const engine = new InstanceEngine({
    name,
    version,
    instanceCount: placements.length,
    factory: (index: number, events: InstanceEvents) => makeInstance(index, instancePlan(plan, placements[index]), contextData(info, source.dir, placements, index), events),
    recorder: ctx.recorder,
    log: ctx.log,
    restartPolicy: restartPolicyFromParameters(config) ?? ctx.restartPolicy,
  });
  const scheduler = schedulerFor(config, version, engine, ctx.log, source.batchByLength);
  const warmups = warmupRuns(config, tensors.inputs, source.dir);
  return scheduler.decoupled ? new DecoupledModelVersion(info, engine, scheduler.streams, warmups) : new TensorModelVersion(info, engine, scheduler.requests, warmups);
}

/** The model file's inputs less the sequence control inputs, which the server fills and config.pbtxt leaves out of `input`. */
function withoutControlInputs(metadata: BackendMetadata, config: ModelConfig): BackendMetadata {
  const controls = new Set(config.sequence_batching?.control_input.map((c) => c.name) ?? []);
  return controls.size === 0 ? metadata : { ...metadata, inputs: metadata.inputs.filter((spec) => !controls.has(spec.name)) };
}

/** `config` as readModelSource fills it in: the platform, or for kinds Triton names by backend only (npu_om, npu_ge, serve-fn), the backend. */
export function infoFor(config: ModelConfig, version: string, tensors: ConfigTensors = configTensors(config)): InferenceModelInfo {
  return {
    name: config.name,
    version,
    platform: config.platform || config.backend,
    inputs: tensors.inputs.map(toTensorSpec),
    outputs: tensors.outputs.map(toTensorSpec),
    maxBatchSize: config.max_batch_size,
    config: modelConfigToJson(config),
    decoupled: config.model_transaction_policy?.decoupled === true,
  };
}

/** An npu_ge instance's plan carries its own number of execution slots. */
function instancePlan(plan: TensorModelPlan, placement: InstancePlacement): TensorModelPlan {
  return placement.slots === undefined ? plan : { ...plan, sessionOptions: { ...plan.sessionOptions, slots: placement.slots } };
}

/**
 * The model file's inputs and outputs. An npu_ge model's ONNX file is read with ONNX Runtime on the
 * CPU, as Huawei's GE backend reads it (src/model_state.cpp, ParseOnnxInfo), so no NPU is opened.
 */
function readMetadata(file: string, kind: TensorModelKind, placement: InstancePlacement): Promise<BackendMetadata> {
  return readModelFileMetadata(file, kind === 'npu_ge' ? { kind: 'cpu', id: 0 } : { kind: placement.kind, id: placement.id }, kind === 'onnx' || kind === 'npu_ge');
}

/** A model file's inputs and outputs, read by opening it once on `device` (with ONNX Runtime, `onnx`, on one thread). */
export async function readModelFileMetadata(file: string, device: DeviceSpec, onnx: boolean): Promise<BackendMetadata> {
  const session = await (await backendForFile(file, device)).load(file, { device, options: onnx ? { intraOpNumThreads: 1 } : undefined });
  try {
    return session.metadata();
  } finally {
    await session.dispose();
  }
}

export function contextData(info: InferenceModelInfo, modelDir: string, placements: readonly InstancePlacement[], index: number): ModelContextData {
  const placement = placements[index];
  return {
    modelName: info.name,
    modelVersion: info.version,
    instanceName: placement.name,
    instanceIndex: index,
    instanceCount: placements.length,
    deviceKind: placement.kind,
    deviceId: placement.id,
    modelDir,
    config: info.config,
  };
}

function workerInstanceFactory(infer: InferCall, logger?: ModelLogger): TensorInstanceFactory {
  return (index, plan, context, events) => new WorkerInstance(index, pathToFileURL(plan.file).href, context, events, infer, plan, logger);
}
