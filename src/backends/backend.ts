import type { Tensor, TensorSpec } from '../spec/tensor.js';

/** Where a backend session runs: `cpu`, `gpu:0` (CUDA), `npu:1` (Ascend). */
export interface DeviceSpec {
  readonly kind: 'cpu' | 'gpu' | 'npu';
  readonly id: number;
}

export interface BackendLoadOptions {
  readonly device?: DeviceSpec;
  /** Backend-specific settings, e.g. ONNX Runtime threads or graph optimisation level. */
  readonly options?: Readonly<Record<string, unknown>>;
}

export interface BackendMetadata {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** Batch sizes the compiled model accepts (Ascend dynamic-batch gears); absent when any size works. */
  readonly batchSizes?: readonly number[];
}

/** One loaded model inside one instance's thread. */
export interface BackendSession {
  readonly backend: string;
  metadata(): BackendMetadata;
  run(inputs: Readonly<Record<string, Tensor>>, outputNames?: readonly string[]): Promise<Record<string, Tensor>>;
  dispose(): Promise<void>;
}

/** A way of running models: ONNX Runtime, Ascend OM. Kept small so a native addon can implement it. */
export interface Backend {
  readonly name: string;
  /** Resolves to a reason string when this backend cannot run here (missing library, no device). */
  available(): Promise<true | string>;
  load(source: string | Uint8Array, options?: BackendLoadOptions): Promise<BackendSession>;
}
