import { basename } from 'node:path';
import { createError } from '../../errors/index.js';
import type { Backend, BackendLoadOptions, BackendMetadata, BackendSession } from '../backend.js';
import { OnnxBackend } from '../onnx/onnx-backend.js';
import { batchGears, geLoadPlan, narrowInputs } from './ge-load-options.js';
import { GeSession } from './ge-session.js';
import { geMissingReason, type NpuNativeBinding } from './native-binding.js';
import { loadNatively } from './npu-errors.js';
import { accessNpu, npuDeviceId, requireNpu, resolveLibraryPath, type NpuAccess } from './npu-library.js';
import { aclDataTypeOf } from './npu-tensors.js';

const BACKEND = 'npu_ge';

export interface GeBackendOptions {
  /** libascendcl.so, libacl_rt.so or a directory with them; default SERVE_FN_ACL_LIBRARY, then the search in docs/npu.md. */
  readonly libraryPath?: string;
  /** A binding to use instead of the built addon, e.g. a fake in unit tests. */
  readonly binding?: NpuNativeBinding;
  /** Reads the ONNX file's inputs and outputs; ONNX Runtime on the CPU by default. */
  readonly onnx?: Backend;
}

/**
 * ONNX models on Ascend NPUs through the GE graph engine: GE parses and compiles the ONNX file on
 * the NPU and runs it with ExecuteGraphWithStreamAsync, as Huawei's Triton GE backend does
 * (hicann/triton-inference-server-ge-backend). Each load owns `slots` execution slots on one NPU.
 * The inputs and outputs (names, datatypes, dims) are read from the ONNX file with ONNX Runtime,
 * as that backend does too (src/model_state.cpp, ParseOnnxInfo), since GE does not report them.
 */
export class GeBackend implements Backend {
  readonly name = BACKEND;
  readonly #libraryPath: string | undefined;
  readonly #binding: NpuNativeBinding | undefined;
  readonly #onnx: Backend;

  constructor(options: GeBackendOptions = {}) {
    this.#libraryPath = resolveLibraryPath(options.libraryPath);
    this.#binding = options.binding;
    this.#onnx = options.onnx ?? new OnnxBackend();
  }

  async available(): Promise<true | string> {
    const access = this.#access();
    return 'reason' in access ? access.reason : true;
  }

  async load(source: string | Uint8Array, options: BackendLoadOptions = {}): Promise<BackendSession> {
    const label = typeof source === 'string' ? basename(source) : 'ONNX model bytes';
    const deviceId = npuDeviceId(BACKEND, options);
    const binding = requireNpu(this.#access());
    const plan = geLoadPlan(options.options ?? {}, label);
    const file = await this.#readMetadata(source, label);
    const batchInputs = file.inputs.filter((spec) => spec.shape[0] === -1).map((spec) => spec.name);
    const gears = batchGears(plan, batchInputs);
    const metadata = { ...file, inputs: narrowInputs(file.inputs, plan, gears) };
    const model = await loadNatively(BACKEND, label, () =>
      binding.loadGeModel!({
        libraryPath: this.#libraryPath,
        deviceId,
        ...(typeof source === 'string' ? { file: source } : { bytes: source }),
        ...plan,
      }),
    );
    return new GeSession(model, metadata, gears, label);
  }

  #access(): NpuAccess {
    const access = accessNpu(this.#binding, this.#libraryPath);
    if ('reason' in access || access.binding.loadGeModel) return access;
    return { reason: geMissingReason(access) };
  }

  /** The ONNX file's inputs and outputs through ONNX Runtime (one thread: it only opens the file). */
  async #readMetadata(source: string | Uint8Array, label: string): Promise<BackendMetadata> {
    const session = await this.#onnx.load(source, { device: { kind: 'cpu', id: 0 }, options: { intraOpNumThreads: 1 } });
    let metadata: BackendMetadata;
    try {
      metadata = session.metadata();
    } finally {
      await session.dispose();
    }
    const untyped = [...metadata.inputs, ...metadata.outputs].find((spec) => aclDataTypeOf(spec.datatype) === undefined);
    if (untyped) throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, `tensor '${untyped.name}' is ${untyped.datatype}, which GE has no data type for`);
    return { inputs: metadata.inputs, outputs: metadata.outputs };
  }
}
