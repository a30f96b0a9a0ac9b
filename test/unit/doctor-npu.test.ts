import { describe, expect, it, vi } from 'vitest';
import { GE_BUILD_HINT, type NativeDeviceReport, type NpuBindingLoad, type NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { describeGe, describeNpu } from '../../src/cli/doctor-npu.js';

/** What the addon loader returns when a test sets it; the real loader otherwise. */
const addon = vi.hoisted(() => ({ load: undefined as NpuBindingLoad | undefined }));
vi.mock('../../src/backends/npu/native-binding.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/backends/npu/native-binding.js')>();
  return { ...actual, loadNpuBinding: () => addon.load ?? actual.loadNpuBinding() };
});

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

describe('describeGe', () => {
  const geBinding = (info: { cannHome: string; headers: string }): NpuNativeBinding => ({ ...binding(Promise.resolve(REPORT)), geInfo: () => info });

  it('reports the CANN home and headers the addon was built against, and the GE libraries this process mapped', () => {
    const mapped = [
      '/usr/lib/x86_64-linux-gnu/libc.so.6',
      '/opt/cann/lib64/libgraph.so',
      '/opt/cann/lib64/libge_runner.so',
      '/opt/cann/lib64/libfmk_onnx_parser.so',
      '/opt/cann/lib64/libge_compiler.so',
      '/opt/cann/lib64/libascendcl.so',
    ];
    expect(describeGe({ binding: geBinding({ cannHome: '/opt/cann', headers: 'CANN 8.5.0' }), mappedFiles: () => mapped })).toEqual({
      available: true,
      cannHome: '/opt/cann',
      headers: 'CANN 8.5.0',
      libraries: mapped.slice(1, 5),
    });
  });

  it('lists only the GE libraries it finds mapped', () => {
    const report = describeGe({ binding: geBinding({ cannHome: '/a', headers: 'CANN 8.5.0' }), mappedFiles: () => ['/b/lib64/libgraph.so', '/b/lib64/libgraph_base.so'] });
    expect(report).toMatchObject({ available: true, cannHome: '/a', libraries: ['/b/lib64/libgraph.so'] });
  });

  it('says an addon without GE was built without CANN, and how to build the GE one', () => {
    const report = describeGe({ binding: binding(Promise.resolve(REPORT)) });
    expect(report).toEqual({ available: false, reason: GE_BUILD_HINT });
    expect(report.reason).toMatch(/built without CANN.*serve_fn_npu_ge\.node.*SERVE_FN_CANN_HOME.*npm run build:native/);
  });

  it("shows the GE addon's own load error when it exists but did not load and the plain one was loaded instead", () => {
    const geLoadError = '/repo/native/build/Release/serve_fn_npu_ge.node: libgraph.so: cannot open shared object file: No such file or directory';
    addon.load = { binding: binding(Promise.resolve(REPORT)), geLoadError };
    try {
      const report = describeGe();
      expect(report.available).toBe(false);
      expect(report.reason).toContain(`serve_fn_npu_ge.node was found but could not be loaded, so the native addon without the GE route was loaded instead: ${geLoadError}`);
    } finally {
      addon.load = undefined;
    }
  });
});
