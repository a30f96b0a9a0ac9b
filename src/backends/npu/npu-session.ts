import { createError } from '../../errors/index.js';
import type { Datatype, Tensor, TensorSpec } from '../../spec/tensor.js';
import type { BackendMetadata, BackendSession } from '../backend.js';
import type { NativeOmModel } from './native-binding.js';
import { gearFor } from './batch-gears.js';
import { fromNativeError } from './npu-errors.js';
import { inputBytes, inputFor, refuseUnexpectedInputs, selectOutputs, tensorData } from './npu-tensors.js';

const BACKEND = 'npu_om';

function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * One OM model loaded on one NPU with its own context. Requests are checked here, against the
 * model's metadata, so callers get SF_ERR_TENSOR_* errors; the addon pads a batch up to the
 * nearest compiled gear and trims the outputs back.
 */
export class NpuSession implements BackendSession {
  readonly backend = BACKEND;
  readonly #model: NativeOmModel;
  readonly #metadata: BackendMetadata;
  readonly #label: string;
  #disposed = false;

  constructor(model: NativeOmModel, metadata: BackendMetadata, label: string) {
    this.#model = model;
    this.#metadata = metadata;
    this.#label = label;
  }

  metadata(): BackendMetadata {
    return this.#metadata;
  }

  async run(inputs: Readonly<Record<string, Tensor>>, outputNames?: readonly string[]): Promise<Record<string, Tensor>> {
    if (this.#disposed) throw createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, 'the session has been disposed');
    const wanted = selectOutputs(this.#metadata, outputNames, this.#label);
    const { views, batch } = this.#prepareInputs(inputs);
    let buffers: ArrayBuffer[];
    try {
      buffers = await this.#model.execute(views, batch);
    } catch (err) {
      throw fromNativeError(err, (message, cause) => createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, message, cause));
    }
    const result: Record<string, Tensor> = {};
    this.#metadata.outputs.forEach((spec, i) => {
      if (!wanted.has(spec.name)) return;
      const shape = spec.shape.map((dim) => (dim === -1 ? batch : dim));
      result[spec.name] = { name: spec.name, datatype: spec.datatype, shape, data: tensorData(spec.datatype as Exclude<Datatype, 'BYTES'>, buffers[i]!) };
    });
    return result;
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    try {
      await this.#model.unload();
    } catch (err) {
      throw fromNativeError(err, (message, cause) => createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, message, cause));
    }
  }

  #prepareInputs(inputs: Readonly<Record<string, Tensor>>): { views: Uint8Array[]; batch: number } {
    refuseUnexpectedInputs(this.#metadata, inputs, this.#label);
    let batch: number | undefined;
    const views = this.#metadata.inputs.map((spec) => {
      const tensor = inputFor(spec, inputs, this.#label);
      batch ??= spec.shape[0] === -1 ? (tensor.shape[0] ?? 0) : 1;
      return this.#checkInput(spec, tensor, batch);
    });
    return { views, batch: batch ?? 1 };
  }

  #checkInput(spec: TensorSpec, tensor: Tensor, batch: number): Uint8Array {
    if (tensor.datatype !== spec.datatype) throw createError('SF_ERR_TENSOR_DATATYPE', spec.name, spec.datatype, tensor.datatype);
    const gears = this.#metadata.batchSizes ?? [];
    // The addon pads the batch to this gear itself; here only a batch no gear holds is refused.
    if (gears.length > 0 && (batch < 1 || gearFor(gears, batch) === undefined)) {
      const expected = spec.shape.map((dim) => (dim === -1 ? `1..${Math.max(...gears)}` : dim));
      throw createError('SF_ERR_TENSOR_SHAPE', spec.name, `[${expected.join(', ')}]`, formatShape(tensor.shape));
    }
    const shapeFits =
      tensor.shape.length === spec.shape.length &&
      spec.shape.every((dim, d) => tensor.shape[d] === (dim === -1 ? batch : dim));
    if (!shapeFits) {
      const expected = spec.shape.map((dim) => (dim === -1 ? batch : dim));
      throw createError('SF_ERR_TENSOR_SHAPE', spec.name, formatShape(expected), formatShape(tensor.shape));
    }
    return inputBytes(spec, tensor, formatShape);
  }
}
