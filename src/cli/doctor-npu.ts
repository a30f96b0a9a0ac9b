import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { NpuNativeBinding } from '../backends/npu/native-binding.js';
import { fromNativeError } from '../backends/npu/npu-errors.js';
import { accessNpu, geBinding, resolveLibraryPath } from '../backends/npu/npu-library.js';
import { createError } from '../errors/index.js';

export interface NpuDeviceReport {
  readonly id: number;
  readonly memoryTotal: number;
  readonly memoryFree: number;
}

export interface NpuDoctorReport {
  readonly available: boolean;
  readonly reason?: string;
  readonly libraryPath?: string;
  readonly version?: string;
  readonly deviceCount?: number;
  readonly devices?: readonly NpuDeviceReport[];
}

export interface DescribeNpuOptions {
  readonly libraryPath?: string;
  /** A binding to use instead of the built addon (tests). */
  readonly binding?: NpuNativeBinding;
}

/** What `serve-fn doctor` prints about the Ascend NPU path: library, version, devices and memory. */
export async function describeNpu(options: DescribeNpuOptions = {}): Promise<NpuDoctorReport> {
  const libraryPath = resolveLibraryPath(options.libraryPath);
  const access = accessNpu(options.binding, libraryPath);
  if ('reason' in access) return { available: false, reason: access.reason };
  try {
    const report = await access.binding.describeDevices(libraryPath);
    const found = {
      libraryPath: report.libraryPath,
      ...(report.version === null ? {} : { version: report.version }),
      deviceCount: report.deviceCount,
      devices: report.devices.map(({ id, memoryTotal, memoryFree }) => ({ id, memoryTotal, memoryFree })),
    };
    if (report.deviceCount === 0) return { available: false, reason: 'AscendCL reports no NPU devices', ...found };
    return { available: true, ...found };
  } catch (err) {
    const error = fromNativeError(err, (message) => createError('SF_ERR_NPU_UNAVAILABLE', message));
    return { available: false, reason: error.message, libraryPath: access.libraryFile };
  }
}

/** The CANN libraries the GE build of the addon links (docs/npu.md, "Building the GE addon"). */
export const GE_LIBRARIES = ['libgraph.so', 'libge_runner.so', 'libfmk_onnx_parser.so', 'libge_compiler.so'] as const;

export interface GeDoctorReport {
  readonly available: boolean;
  readonly reason?: string;
  /** The CANN toolkit the addon was built against. */
  readonly cannHome?: string;
  /** The CANN headers its GE declarations match, e.g. "CANN 8.5.0". */
  readonly headers?: string;
  /** The GE libraries as the dynamic loader mapped them into this process (a CANN other than cannHome shows here). */
  readonly libraries?: readonly string[];
}

export interface DescribeGeOptions {
  /** A binding to use instead of the built addon (tests). */
  readonly binding?: NpuNativeBinding;
  /** The files mapped into this process; default: those /proc/self/maps lists. */
  readonly mappedFiles?: () => readonly string[];
}

function processMappedFiles(): string[] {
  let maps: string;
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return [];
  }
  // Each line: address perms offset dev inode [path]; the path is the sixth field and may hold spaces.
  const files = maps.split('\n').map((line) => line.split(/\s+/).slice(5).join(' ')).filter((path) => path.startsWith('/'));
  return [...new Set(files)];
}

/** What `serve-fn doctor` prints about the GE route: the CANN it was built against and the libraries in use, or why there is none. */
export function describeGe(options: DescribeGeOptions = {}): GeDoctorReport {
  const loaded = geBinding(options.binding, 'geInfo');
  if ('reason' in loaded) return { available: false, reason: loaded.reason };
  const { cannHome, headers } = loaded.binding.geInfo();
  const mapped = (options.mappedFiles ?? processMappedFiles)();
  const libraries = GE_LIBRARIES.flatMap((name) => mapped.filter((file) => basename(file) === name || basename(file).startsWith(`${name}.`)));
  return { available: true, cannHome, headers, libraries };
}
