import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
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

/** What the addon adds to an Error raised by a failed GE call (GEGetErrorMsgV2 gives geMessage). */
export interface NativeGeErrorFields {
  readonly geFunction: string;
  readonly geStatus: number;
  readonly geMessage: string;
}

/** The GE route (present only in serve_fn_npu_ge.node, built against a CANN toolkit). */
export interface NativeGeInfo {
  /** The CANN home the addon was built against. */
  readonly cannHome: string;
  /** The headers its declarations were transcribed from, e.g. "CANN 8.5.0". */
  readonly headers: string;
}

export interface NativeGeLoadOptions {
  /** AscendCL, as loadModel. */
  readonly libraryPath?: string;
  readonly deviceId: number;
  /** The ONNX model: a file or its bytes. */
  readonly file?: string;
  readonly bytes?: Uint8Array;
  /** (session, graph, stream) execution slots, at least 1. */
  readonly slots: number;
  /** GEInitialize's: the first load in the process sets them; a later load whose global options differ is refused naming the key. */
  readonly globalOptions: Readonly<Record<string, string>>;
  /** Each ge::Session's (the addon adds ge.session_device_id). */
  readonly sessionOptions: Readonly<Record<string, string>>;
  /** AddGraph's. */
  readonly graphOptions: Readonly<Record<string, string>>;
  /** aclgrphParseONNX(FromMem)'s. */
  readonly parserOptions: Readonly<Record<string, string>>;
}

export interface NativeGeTensor {
  readonly data: ArrayBufferView;
  readonly dims: readonly number[];
  /** ge::DataType code (the same numbers as aclDataType). */
  readonly dataType: number;
}

export interface NativeGeOutput {
  readonly dataType: number;
  /** Known dims → caller-allocated device output; any output without → GE allocates them all. */
  readonly dims?: readonly number[];
}

export interface NativeGeModel {
  readonly slots: number;
  readonly unloaded: boolean;
  /** One ExecuteGraphWithStreamAsync on one slot (one at a time per slot; a busy slot is refused). */
  execute(
    slot: number,
    inputs: readonly NativeGeTensor[],
    outputs: readonly NativeGeOutput[],
  ): Promise<{ data: ArrayBuffer; dims: number[] }[]>;
  /** RemoveGraph, sessions, streams, buffers; GEFinalize after the last model of the process. */
  unload(): Promise<void>;
}

/** A conversion runs the IR build API without AscendCL or a device, as ATC does. */
export interface NativeGeConvertOptions {
  readonly file?: string;
  readonly bytes?: Uint8Array;
  /** The .om path as the user gave it (the result names the file actually written). */
  readonly output: string;
  readonly parserOptions: Readonly<Record<string, string>>;
  /** ge::ir_option entries by their key strings: ge.socVersion, input_shape, ge.dynamicBatchSize, ge.exec.precision_mode… */
  readonly buildOptions: Readonly<Record<string, string>>;
}

export interface NpuNativeBinding {
  /** dlopen only: no aclInit, no device access. */
  probeLibrary(libraryPath?: string): LibraryProbe;
  describeDevices(libraryPath?: string): Promise<NativeDeviceReport>;
  loadModel(options: NativeLoadOptions): Promise<NativeOmModel>;
  /** The GE route: only in serve_fn_npu_ge.node. */
  geInfo?(): NativeGeInfo;
  loadGeModel?(options: NativeGeLoadOptions): Promise<NativeGeModel>;
  convertGeModel?(options: NativeGeConvertOptions): Promise<{ readonly file: string }>;
}

/** Why an addon without GE has none, and how to build the one that has it (GeBackend, doctor and convert say it). */
export const GE_BUILD_HINT =
  'the native addon was built without CANN, so it has no GE (graph engine) route: serve_fn_npu_ge.node is built only against a CANN toolkit. ' +
  "Source CANN's set_env.sh (it sets ASCEND_HOME_PATH) or set SERVE_FN_CANN_HOME to the toolkit, then run `npm run build:native` (docs/npu.md, \"Building the GE addon\")";

export type NpuBindingLoad =
  | {
      readonly binding: NpuNativeBinding;
      /** Why serve_fn_npu_ge.node, found, did not load (e.g. libge_runner.so missing), when the plain addon was loaded instead. */
      readonly geLoadError?: string;
    }
  | { readonly reason: string };

/** Why a loaded addon has no GE route: the GE build's own load error when there was one, else GE_BUILD_HINT. */
export function geMissingReason(loaded: { readonly geLoadError?: string }): string {
  if (loaded.geLoadError === undefined) return GE_BUILD_HINT;
  return (
    `${GE_ADDON} was found but could not be loaded, so the native addon without the GE route was loaded instead: ${loaded.geLoadError}. ` +
    "Source CANN's set_env.sh (LD_LIBRARY_PATH must reach the CANN libraries it was built against), or rebuild it with `npm run build:native`"
  );
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const NATIVE_DIR = join(ROOT, 'native');
const GE_ADDON = 'serve_fn_npu_ge.node';
/**
 * SERVE_FN_NPU_ADDON (a path) wins; else the GE build (a superset, built only against a CANN
 * toolkit), then the plain one, Release before Debug; last the prebuild the package ships
 * (native/prebuilds/<platform>-<arch>/, chosen by node-gyp-build, as the install script chose it),
 * so an addon built from source replaces the prebuild, as node-gyp-build and sharp do.
 */
function addonFiles(): string[] {
  const explicit = process.env.SERVE_FN_NPU_ADDON;
  if (explicit) return [resolve(explicit)];
  const built = [GE_ADDON, 'serve_fn_npu.node'].flatMap((name) =>
    ['Release', 'Debug'].map((kind) => join(NATIVE_DIR, 'build', kind, name)),
  );
  const prebuild = matchingPrebuild();
  return prebuild === undefined || built.includes(prebuild) ? built : [...built, prebuild];
}

/** The prebuild node-gyp-build picks for this platform, architecture and libc; none where none matches. */
function matchingPrebuild(): string | undefined {
  const nodeGypBuild = createRequire(import.meta.url)('node-gyp-build') as { path(dir: string): string };
  try {
    return nodeGypBuild.path(NATIVE_DIR);
  } catch {
    return undefined;
  }
}

/**
 * The first of `files` that loads. A GE build that exists but fails to load (its CANN libraries
 * moved, say) keeps its error in geLoadError, so GeBackend and doctor can say it rather than
 * "built without CANN" when the plain addon after it loads. `absent` says why a missing file was.
 */
export function loadAddon(files: readonly string[], absent = 'not built'): NpuBindingLoad {
  const require = createRequire(import.meta.url);
  const tried: string[] = [];
  let geLoadError: string | undefined;
  for (const file of files) {
    if (!existsSync(file)) {
      tried.push(`${file} (${absent})`);
      continue;
    }
    try {
      const binding = require(file) as NpuNativeBinding;
      return geLoadError === undefined ? { binding } : { binding, geLoadError };
    } catch (err) {
      const message = (err as Error).message;
      tried.push(`${file} (${message})`);
      if (basename(file) === GE_ADDON) geLoadError ??= `${file}: ${message}`;
    }
  }
  return {
    reason:
      `the native addon could not be loaded; tried ${tried.join(', ')}. ` +
      'No prebuild matches this platform: build it with `npm run build:native` (needs g++ and node-gyp, not CANN).',
  };
}

let cached: NpuBindingLoad | undefined;

/** Loads the addon once per thread; later calls return the same outcome. */
export function loadNpuBinding(): NpuBindingLoad {
  cached ??= loadAddon(addonFiles(), process.env.SERVE_FN_NPU_ADDON ? 'named by SERVE_FN_NPU_ADDON; no such file' : 'not built');
  return cached;
}
