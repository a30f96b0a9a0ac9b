import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The one place that loads the native addon (native/: the Ascend NPU backend and system shared
 * memory) and types what it exports. The cast in loadNpuBinding() is the only untyped edge;
 * everything else goes through these interfaces.
 */

export interface NativeTensorDescription {
  readonly name: string;
  /** -1 in dim 0 is the batch of a dynamic-batch model. */
  readonly dims: readonly number[];
  /** aclDataType code. */
  readonly dataType: number;
  /** Bytes at the largest batch gear. */
  readonly byteSize: number;
}

export interface NativeModelDescription {
  /** Without the dynamic-batch input ATC adds; the addon feeds that one itself. */
  readonly inputs: readonly NativeTensorDescription[];
  readonly outputs: readonly NativeTensorDescription[];
  /** Ascending compiled batch sizes; empty for a static model. */
  readonly batchGears: readonly number[];
}

export interface NativeOmModel {
  readonly unloaded: boolean;
  describe(): NativeModelDescription;
  /** Inputs in description order; `batch` rows each (padded to a gear and trimmed back natively). */
  execute(inputs: readonly ArrayBufferView[], batch: number): Promise<ArrayBuffer[]>;
  unload(): Promise<void>;
}

export interface NativeLoadOptions {
  readonly libraryPath?: string;
  readonly deviceId: number;
  readonly file?: string;
  readonly bytes?: Uint8Array;
}

export type LibraryProbe =
  | { readonly found: true; readonly path: string; readonly variant: 'ascendcl' | 'split'; readonly tried: readonly string[] }
  | { readonly found: false; readonly tried: readonly string[] };

export interface NativeDeviceReport {
  readonly libraryPath: string;
  readonly variant: 'ascendcl' | 'split';
  readonly version: string | null;
  readonly deviceCount: number;
  readonly devices: readonly { readonly id: number; readonly memoryTotal: number; readonly memoryFree: number }[];
}

/** What the addon adds to an Error raised by a failed AscendCL call. */
export interface NativeAclErrorFields {
  readonly aclFunction: string;
  readonly aclCode: number;
  readonly aclMessage: string;
}

/** One mmap of a POSIX shared-memory object (native/src/shared-memory.h). */
export interface NativeSharedMemoryMapping {
  /** The mapped bytes; undefined once unmapped (views over it then read as empty). */
  readonly buffer: ArrayBuffer | undefined;
  unmap(): void;
}

/** What the addon adds to the Error mapSharedMemory throws. */
export interface NativeSharedMemoryErrorFields {
  readonly reason: 'open' | 'bounds' | 'map';
  readonly errno?: number;
  /** With 'bounds': the size of the object, in bytes. */
  readonly objectSize?: number;
}

export interface NpuNativeBinding {
  /** dlopen only: no aclInit, no device access. */
  probeLibrary(libraryPath?: string): LibraryProbe;
  describeDevices(libraryPath?: string): Promise<NativeDeviceReport>;
  loadModel(options: NativeLoadOptions): Promise<NativeOmModel>;
  /** shm_open (read/write, never create) and mmap of [offset, offset + byteSize) of the object `key`; absent in an addon built before it. */
  mapSharedMemory?(key: string, offset: number, byteSize: number): NativeSharedMemoryMapping;
}

export type NpuBindingLoad = { readonly binding: NpuNativeBinding } | { readonly reason: string };

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const ADDON_FILES = ['Release', 'Debug'].map((kind) => join(ROOT, 'native', 'build', kind, 'serve_fn_npu.node'));

let cached: NpuBindingLoad | undefined;

function load(): NpuBindingLoad {
  const require = createRequire(import.meta.url);
  const tried: string[] = [];
  for (const file of ADDON_FILES) {
    if (!existsSync(file)) {
      tried.push(`${file} (not built)`);
      continue;
    }
    try {
      return { binding: require(file) as NpuNativeBinding };
    } catch (err) {
      tried.push(`${file} (${(err as Error).message})`);
    }
  }
  return {
    reason:
      `the native addon could not be loaded; tried ${tried.join(', ')}. ` +
      'Build it with `npm run build:native` (needs g++ and node-gyp, not CANN).',
  };
}

/** Loads the addon once per thread; later calls return the same outcome. */
export function loadNpuBinding(): NpuBindingLoad {
  cached ??= load();
  return cached;
}
