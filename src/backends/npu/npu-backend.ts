import { basename } from 'node:path';
import { createError } from '../../errors/index.js';
import type { Backend, BackendLoadOptions, BackendSession } from '../backend.js';
import type { NativeOmModel, NpuNativeBinding } from './native-binding.js';
import { fromNativeError } from './npu-errors.js';
import { accessNpu, resolveLibraryPath } from './npu-library.js';
import { NpuSession } from './npu-session.js';
import { toBackendMetadata } from './npu-tensors.js';

const BACKEND = 'npu_om';

export interface NpuBackendOptions {
  /** libascendcl.so, libacl_rt.so or a directory with them; default SERVE_FN_ACL_LIBRARY, then the search in docs/npu.md. */
  readonly libraryPath?: string;
  /** A binding to use instead of the built addon, e.g. a fake in unit tests. */
  readonly binding?: NpuNativeBinding;
}

/** Ascend OM models (ATC-compiled) through AscendCL; each load gets its own context on its NPU. */
export class NpuBackend implements Backend {
  readonly name = BACKEND;
  readonly #libraryPath: string | undefined;
  readonly #binding: NpuNativeBinding | undefined;

  constructor(options: NpuBackendOptions = {}) {
    this.#libraryPath = resolveLibraryPath(options.libraryPath);
    this.#binding = options.binding;
  }

  async available(): Promise<true | string> {
    const access = accessNpu(this.#binding, this.#libraryPath);
    return 'reason' in access ? access.reason : true;
  }

  async load(source: string | Uint8Array, options: BackendLoadOptions = {}): Promise<BackendSession> {
    const device = options.device ?? { kind: 'npu', id: 0 };
    const label = typeof source === 'string' ? basename(source) : 'OM model bytes';
    if (device.kind !== 'npu') {
      throw createError('SF_ERR_BACKEND_UNSUPPORTED', BACKEND, `device '${device.kind}:${device.id}'; use an NPU device such as 'npu:0'`);
    }
    const access = accessNpu(this.#binding, this.#libraryPath);
    if ('reason' in access) throw createError('SF_ERR_NPU_UNAVAILABLE', access.reason);
    let model: NativeOmModel;
    try {
      model = await access.binding.loadModel({
        libraryPath: this.#libraryPath,
        deviceId: device.id,
        ...(typeof source === 'string' ? { file: source } : { bytes: source }),
      });
    } catch (err) {
      throw fromNativeError(err, (message, cause) => createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, message, cause));
    }
    const metadata = toBackendMetadata(model.describe());
    if (typeof metadata === 'string') {
      await model.unload();
      throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, metadata);
    }
    return new NpuSession(model, metadata, label);
  }
}
