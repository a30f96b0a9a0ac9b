import { fromNativeError } from '../backends/npu/npu-errors.js';
import { accessNpu, resolveLibraryPath } from '../backends/npu/npu-library.js';
import type { NpuNativeBinding } from '../backends/npu/native-binding.js';
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
