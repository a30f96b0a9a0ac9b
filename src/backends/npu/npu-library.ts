import { loadNpuBinding, type NpuNativeBinding } from './native-binding.js';

/** Points serve-fn at libascendcl.so, libacl_rt.so, or a directory holding them (docs/npu.md). */
export const ACL_LIBRARY_ENV = 'SERVE_FN_ACL_LIBRARY';

export function resolveLibraryPath(explicit?: string): string | undefined {
  return explicit ?? (process.env[ACL_LIBRARY_ENV] || undefined);
}

export type NpuAccess =
  | { readonly binding: NpuNativeBinding; readonly libraryFile: string }
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
  return { binding: loaded.binding, libraryFile: probe.path };
}
