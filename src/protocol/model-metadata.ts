import type { ModelRepository } from '../inference/inference-model.js';
import type { TensorSpec } from '../tensor/tensor.js';

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
