import { basename } from 'node:path';
import { createError } from '../../errors/index.js';
import type { Backend, BackendLoadOptions, BackendSession } from '../backend.js';
import type { NpuNativeBinding } from './native-binding.js';
import { loadNatively } from './npu-errors.js';
import { accessNpu, npuDeviceId, requireNpu, resolveLibraryPath } from './npu-library.js';
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
    const label = typeof source === 'string' ? basename(source) : 'OM model bytes';
    const deviceId = npuDeviceId(BACKEND, options);
    const binding = requireNpu(accessNpu(this.#binding, this.#libraryPath));
    const model = await loadNatively(BACKEND, label, () =>
      binding.loadModel({
        libraryPath: this.#libraryPath,
        deviceId,
        ...(typeof source === 'string' ? { file: source } : { bytes: source }),
      }),
    );
    const metadata = toBackendMetadata(model.describe());
    if (typeof metadata === 'string') {
      await model.unload();
      throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, metadata);
    }
    return new NpuSession(model, metadata, label);
  }
}
