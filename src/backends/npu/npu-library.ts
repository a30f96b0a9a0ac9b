import { createError } from '../../errors/index.js';
import type { BackendLoadOptions } from '../backend.js';
import { geMissingReason, loadNpuBinding, type NpuNativeBinding } from './native-binding.js';

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

/** The GE functions `member` names, as a binding has them once that member is checked. */
export type GeBinding<K extends 'geInfo' | 'convertGeModel'> = NpuNativeBinding & Required<Pick<NpuNativeBinding, K>>;

/**
 * `binding` (tests) or the addon, when it has the GE function `member`; else why not: the addon's
 * load failure, or (`geMissing`) geMissingReason when it loaded without the GE route.
 */
export function geBinding<K extends 'geInfo' | 'convertGeModel'>(
  binding: NpuNativeBinding | undefined,
  member: K,
): { readonly binding: GeBinding<K> } | { readonly reason: string; readonly geMissing: boolean } {
  const loaded = binding ? { binding } : loadNpuBinding();
  if ('reason' in loaded) return { reason: loaded.reason, geMissing: false };
  if (!loaded.binding[member]) return { reason: geMissingReason(loaded), geMissing: true };
  return { binding: loaded.binding as GeBinding<K> };
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
