import type { InferenceModel, ModelRepository } from '../inference/inference-model.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import type { ModelStatisticsResponse } from '../metrics/model-statistics.js';
import type { TensorSpec } from '../spec/tensor.js';

export interface TensorMetadata {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
}

/** `$metadata_model_response` (KServe v2 required_api.md), the same over HTTP and gRPC. */
export interface ModelMetadata {
  readonly name: string;
  readonly versions: readonly string[];
  readonly platform: string;
  readonly inputs: readonly TensorMetadata[];
  readonly outputs: readonly TensorMetadata[];
}

/**
 * Metadata of a model version as Triton gives it: shapes with the batch dimension (-1) in front
 * when the model batches; every served version when none is asked for, else just that one.
 */
export function modelMetadata(repository: ModelRepository, name: string, version?: string): ModelMetadata {
  const { info } = repository.get(name, version);
  const batch = info.maxBatchSize > 0 ? [-1] : [];
  const tensor = (spec: TensorSpec): TensorMetadata => ({ name: spec.name, datatype: spec.datatype, shape: [...batch, ...spec.shape] });
  return {
    name: info.name,
    versions: version === undefined ? repository.models(name).map((m) => m.info.version) : [info.version],
    platform: info.platform,
    inputs: info.inputs.map(tensor),
    outputs: info.outputs.map(tensor),
  };
}

/** Triton's ModelConfig JSON of a model version, as HTTP's `/config` answers it and gRPC's ModelConfig encodes it. */
export function modelConfig(repository: ModelRepository, name: string, version?: string): Readonly<Record<string, unknown>> {
  return repository.get(name, version).info.config;
}

/**
 * Triton's statistics (extension_statistics.md): every model when no name is given, every served
 * version of a model when no version is. Each model is registered first, so one that has not run
 * yet shows zeros (as Triton lists every loaded model); versions the recorder still holds after an
 * unload are left out.
 */
export function modelStatistics(recorder: InferenceRecorder, repository: ModelRepository, name?: string, version?: string): ModelStatisticsResponse {
  if (name === undefined) return statisticsOf(recorder, repository.models());
  const served = version === undefined ? repository.models(name) : [repository.get(name, version)];
  // No served version: get() throws the unknown-model error with Triton's wording.
  return statisticsOf(recorder, served.length > 0 ? served : [repository.get(name)]);
}

function statisticsOf(recorder: InferenceRecorder, served: readonly InferenceModel[]): ModelStatisticsResponse {
  const key = (name: string, version: string): string => `${name}\u0000${version}`;
  const wanted = new Set(served.map(({ info }) => key(info.name, info.version)));
  for (const { info } of served) recorder.registerModel(info.name, info.version);
  const all = recorder.statistics();
  return { model_stats: all.model_stats.filter((s) => wanted.has(key(s.name, s.version))) };
}

/**
 * Triton's ModelIsReady (core server.cc): false, not an error, for a model or version the
 * repository does not serve, such as one just unloaded; Triton's gRPC clients read it so.
 */
export function modelReady(repository: ModelRepository, name: string, version?: string): boolean {
  const model = version === undefined ? repository.models(name).at(-1) : repository.models(name).find((m) => m.info.version === version);
  return model?.ready() ?? false;
}

/** Triton's server readiness: the server serves and every model in the repository is ready. */
export function serverReady(ready: () => boolean, repository: ModelRepository): boolean {
  return ready() && repository.models().every((m) => m.ready());
}

/** What the server says of itself over HTTP and gRPC: the repository it serves, its name and protocol extensions. */
export interface ServerIdentity {
  readonly repository: ModelRepository;
  readonly serverName: string;
  readonly serverVersion: string;
  readonly extensions: readonly string[];
  readonly ready: () => boolean;
}

/** Server metadata (KServe v2 required_api.md), the same on both transports. */
export function serverMetadata(server: ServerIdentity): { name: string; version: string; extensions: string[] } {
  return { name: server.serverName, version: server.serverVersion, extensions: [...server.extensions] };
}
