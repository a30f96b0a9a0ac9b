import { describe, expect, it } from 'vitest';
import type { NativeDeviceReport, NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { describeNpu } from '../../src/cli/doctor-npu.js';

function binding(devices: Promise<NativeDeviceReport>, found = true): NpuNativeBinding {
  return {
    probeLibrary: () =>
      found ? { found: true, path: '/cann/lib64/libascendcl.so', variant: 'ascendcl', tried: [] } : { found: false, tried: ['libascendcl.so: nope'] },
    describeDevices: () => devices,
    loadModel: () => Promise.reject(new Error('not used')),
  };
}

const REPORT: NativeDeviceReport = {
  libraryPath: '/cann/lib64/libascendcl.so',
  variant: 'ascendcl',
  version: '8.0.0',
  deviceCount: 1,
  devices: [{ id: 0, memoryTotal: 32, memoryFree: 30 }],
};

describe('describeNpu', () => {
  it('reports library, version and devices', async () => {
    expect(await describeNpu({ binding: binding(Promise.resolve(REPORT)) })).toEqual({
      available: true,
      libraryPath: '/cann/lib64/libascendcl.so',
      version: '8.0.0',
      deviceCount: 1,
      devices: [{ id: 0, memoryTotal: 32, memoryFree: 30 }],
    });
  });

  it('leaves out an unknown version and is not available without devices', async () => {
    const none = { ...REPORT, version: null, deviceCount: 0, devices: [] };
    expect(await describeNpu({ binding: binding(Promise.resolve(none)) })).toEqual({
      available: false,
      reason: 'AscendCL reports no NPU devices',
      libraryPath: '/cann/lib64/libascendcl.so',
      deviceCount: 0,
      devices: [],
    });
  });

  it('gives the reason when the library is missing or AscendCL fails', async () => {
    const missing = await describeNpu({ binding: binding(Promise.resolve(REPORT), false) });
    expect(missing.available).toBe(false);
    expect(missing.reason).toMatch(/^AscendCL library not found; tried libascendcl.so: nope\. /);
    const failed = Object.assign(new Error('x'), { aclFunction: 'aclInit', aclCode: 500004, aclMessage: 'driver not loaded' });
    expect(await describeNpu({ binding: binding(Promise.reject(failed)) })).toEqual({
      available: false,
      reason: 'aclInit failed with ACL error 500004: driver not loaded',
      libraryPath: '/cann/lib64/libascendcl.so',
    });
  });
});
