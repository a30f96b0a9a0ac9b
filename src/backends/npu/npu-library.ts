import { createError } from '../../errors/index.js';
import type { BackendLoadOptions } from '../backend.js';
import { loadNpuBinding, type NpuNativeBinding } from './native-binding.js';

/** Points serve-fn at libascendcl.so, libacl_rt.so, or a directory holding them (docs/npu.md). */
export const ACL_LIBRARY_ENV = 'SERVE_FN_ACL_LIBRARY';

export function resolveLibraryPath(explicit?: string): string | undefined {
  return explicit ?? (process.env[ACL_LIBRARY_ENV] || undefined);
}

export type NpuAccess =
  | { readonly binding: NpuNativeBinding; readonly libraryFile: string; /** As NpuBindingLoad's. */ readonly geLoadError?: string }
  | { readonly reason: string };

/** The addon plus a usable AscendCL library, or why the NPU path cannot run on this machine. */
export function accessNpu(binding: NpuNativeBinding | undefined, libraryPath: string | undefined): NpuAccess {
  const loaded = binding ? { binding } : loadNpuBinding();
  if ('reason' in loaded) return loaded;
  const probe = loaded.binding.probeLibrary(libraryPath);
  if (!probe.found) {
    return {
      reason:
        `AscendCL library not found; tried ${probe.tried.join('; ')}. Install CANN and source its set_env.sh ` +
        `(it sets ASCEND_HOME_PATH and LD_LIBRARY_PATH), or set ${ACL_LIBRARY_ENV} to libascendcl.so or its directory.`,
    };
  }
  return { binding: loaded.binding, libraryFile: probe.path, ...('geLoadError' in loaded ? { geLoadError: loaded.geLoadError } : {}) };
}

/** The binding of an access, or SF_ERR_NPU_UNAVAILABLE with the reason there is none. */
export function requireNpu(access: NpuAccess): NpuNativeBinding {
  if ('reason' in access) throw createError('SF_ERR_NPU_UNAVAILABLE', access.reason);
  return access.binding;
}

/** The NPU a load asks for (npu:0 when it names none); another kind of device is SF_ERR_BACKEND_UNSUPPORTED. */
export function npuDeviceId(backend: string, options: BackendLoadOptions): number {
  const device = options.device ?? { kind: 'npu', id: 0 };
  if (device.kind !== 'npu') {
    throw createError('SF_ERR_BACKEND_UNSUPPORTED', backend, `device '${device.kind}:${device.id}'; use an NPU device such as 'npu:0'`);
  }
  return device.id;
}
