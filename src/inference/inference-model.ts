import type { Tensor, TensorSpec } from '../spec/tensor.js';
import type { RequestTrace } from '../tracing/request-tracing.js';

/**
 * The tensor-level view of a served model that the KServe v2 / Triton protocol speaks to. Repository
 * models (config-only ONNX, model.ts, ensembles) implement it; the protocol layer only uses this file.
 */

export interface InferenceModelInfo {
  readonly name: string;
  readonly version: string;
  /** Triton's platform string, e.g. `onnxruntime_onnx`, `ensemble`, or the backend name (`python` → `serve-fn`). */
  readonly platform: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** 0 = the model has no batch dimension; otherwise inputs and outputs carry an implicit first dimension. */
  readonly maxBatchSize: number;
  /** Triton's ModelConfig JSON, as `GET /v2/models/{m}/config` serves it. */
  readonly config: Readonly<Record<string, unknown>>;
  /** Decoupled models answer 0..N times per request (served over streaming routes only). */
  readonly decoupled: boolean;
}

export interface RequestedOutput {
  readonly name: string;
  readonly parameters?: Readonly<Record<string, unknown>>;
}

export interface InferRequest {
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  /** Absent = every output. */
  readonly outputs?: readonly RequestedOutput[];
  readonly parameters?: Readonly<Record<string, unknown>>;
  /** Triton's `priority` (1 = highest, 0 = default). */
  readonly priority?: number;
  /** Triton's `timeout` in µs. */
  readonly timeoutUs?: number;
  readonly signal?: AbortSignal;
  /** The caller's trace, when this request gets the model's spans (TraceSettings.admit). */
  readonly trace?: RequestTrace;
}

export interface InferResponse {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id?: string;
  readonly outputs: readonly Tensor[];
  readonly parameters?: Readonly<Record<string, unknown>>;
}

export interface InferenceModel {
  readonly info: InferenceModelInfo;
  /** True once every instance is initialised and warmed up, false while loading, draining or unloaded. */
  ready(): boolean;
  /** Checks inputs against `info` (SF_ERR_TENSOR_* 400s), queues, batches, runs. */
  infer(request: InferRequest): Promise<InferResponse>;
}

export interface RepositoryIndexEntry {
  readonly name: string;
  readonly version?: string;
  /** Triton's states: UNKNOWN, READY, UNAVAILABLE, LOADING, UNLOADING. */
  readonly state: string;
  readonly reason?: string;
}

export interface LoadRequest {
  /** A config.pbtxt-equivalent JSON override (Triton's `config` parameter). */
  readonly config?: string;
  /** Files keyed `file:<version>/<name>`, as bytes (decoded from Triton's base64 parameters). */
  readonly files?: Readonly<Record<string, Uint8Array>>;
}

/** What the protocol's model-control routes drive (Triton's model repository extension). */
export interface ModelRepository {
  readonly controlMode: 'none' | 'explicit' | 'poll';
  /** Every served version of `name` (newest last), or every model when `name` is absent. */
  models(name?: string): readonly InferenceModel[];
  /** Throws SF_ERR_MODEL_UNKNOWN / SF_ERR_MODEL_VERSION_UNKNOWN with Triton's wording. */
  get(name: string, version?: string): InferenceModel;
  index(options?: { readyOnly?: boolean }): Promise<readonly RepositoryIndexEntry[]>;
  load(name: string, request?: LoadRequest): Promise<void>;
  /** Drains in-flight requests, then finalizes. */
  unload(name: string): Promise<void>;
}
