import { describe, expect, it } from 'vitest';
import type { NativeSharedMemoryMapping, NpuBindingLoad, NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { SystemSharedMemoryRegistry } from '../../src/protocol/system-shared-memory/registry.js';
import { thrown } from '../helpers/thrown.js';

/** Objects of a pretend /dev/shm, mapped as plain ArrayBuffers; `unmapped` counts unmap() calls. */
function fakeAddon(objects: Record<string, number>): { load: () => NpuBindingLoad; unmapped: string[] } {
  const unmapped: string[] = [];
  const mapSharedMemory = (key: string, offset: number, byteSize: number): NativeSharedMemoryMapping => {
    const size = objects[key];
    if (size === undefined) throw Object.assign(new Error(`shm_open('${key}'): No such file or directory`), { reason: 'open', errno: 2 });
    if (offset + byteSize > size) throw Object.assign(new Error(`[${offset}, ${offset + byteSize}) does not fit in '${key}' of ${size} bytes`), { reason: 'bounds', objectSize: size });
    let buffer: ArrayBuffer | undefined = new ArrayBuffer(byteSize);
    return {
      get buffer() {
        return buffer;
      },
      unmap: () => {
        buffer = undefined;
        unmapped.push(key);
      },
    };
  };
  const binding = { mapSharedMemory } as unknown as NpuNativeBinding;
  return { load: () => ({ binding }), unmapped };
}

describe('SystemSharedMemoryRegistry', () => {
  it('registers a region and reports it in Triton\'s status shape', () => {
    const registry = new SystemSharedMemoryRegistry(fakeAddon({ '/input': 128 }).load);
    registry.register('input_data', '/input', 64, 64);
    expect(registry.status()).toEqual([{ name: 'input_data', key: '/input', offset: 64, byte_size: 64 }]);
    expect(registry.status('input_data')).toEqual([{ name: 'input_data', key: '/input', offset: 64, byte_size: 64 }]);
    expect(registry.available).toBe(true);
  });

  it('refuses a region registered twice, with Triton\'s message, and keeps the first', () => {
    const registry = new SystemSharedMemoryRegistry(fakeAddon({ '/input': 128, '/other': 16 }).load);
    registry.register('input_data', '/input', 0, 128);
    const err = thrown(() => registry.register('input_data', '/other', 0, 16));
    expect(err).toMatchObject({ code: 'SF_ERR_SHM_REGION_EXISTS', statusCode: 400, message: "shared memory region 'input_data' already in manager" });
    expect(registry.status('input_data')[0].key).toBe('/input');
  });

  it('refuses a range past the end of the object and an object that does not exist, keeping the cause', () => {
    const registry = new SystemSharedMemoryRegistry(fakeAddon({ '/input': 128 }).load);
    const bounds = thrown(() => registry.register('r', '/input', 64, 65));
    expect(bounds).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED', statusCode: 400, message: "failed to register shared memory region 'r': invalid args: [64, 129) does not fit in '/input' of 128 bytes" });
    expect((bounds as Error).cause).toMatchObject({ reason: 'bounds' });
    const missing = thrown(() => registry.register('r', '/missing', 0, 8));
    expect(missing).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED', message: expect.stringContaining("Unable to open shared memory region: '/missing'") });
    expect(thrown(() => registry.register('r', '/input', -1, 8))).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED' });
    expect(thrown(() => registry.register('r', '/input', 0, 0))).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED', message: expect.stringContaining('byte_size must be a positive integer') });
    expect(registry.status()).toEqual([]);
  });

  it('views only inside a region: a bad offset or a range past its end is refused with Triton\'s messages', () => {
    const registry = new SystemSharedMemoryRegistry(fakeAddon({ '/input': 128 }).load);
    registry.register('r', '/input', 0, 64);
    expect(registry.view('r', 16, 48).byteLength).toBe(48);
    expect(thrown(() => registry.view('r', 64, 1))).toMatchObject({ code: 'SF_ERR_SHM_OFFSET_INVALID', statusCode: 400, message: "Invalid offset for shared memory region: 'r'" });
    expect(thrown(() => registry.view('r', 16, 49))).toMatchObject({ code: 'SF_ERR_SHM_BYTE_SIZE_INVALID', message: "Invalid offset + byte size for shared memory region: 'r'" });
    expect(thrown(() => registry.view('r', 1, Number.MAX_SAFE_INTEGER))).toMatchObject({ code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' });
    expect(thrown(() => registry.view('r', -1, 1))).toMatchObject({ code: 'SF_ERR_SHM_OFFSET_INVALID' });
  });

  it('answers an unknown region with Triton\'s message, for status and view', () => {
    const registry = new SystemSharedMemoryRegistry(fakeAddon({}).load);
    expect(thrown(() => registry.status('nope'))).toMatchObject({ code: 'SF_ERR_SHM_REGION_UNKNOWN', statusCode: 400, message: "Unable to find shared memory region: 'nope'" });
    expect(thrown(() => registry.view('nope', 0, 1))).toMatchObject({ code: 'SF_ERR_SHM_REGION_UNKNOWN' });
  });

  it('unregisters one region, or all of them, unmapping each; an unknown name is a no-op as in Triton', () => {
    const addon = fakeAddon({ '/a': 8, '/b': 8, '/c': 8 });
    const registry = new SystemSharedMemoryRegistry(addon.load);
    registry.register('a', '/a', 0, 8);
    registry.register('b', '/b', 0, 8);
    registry.register('c', '/c', 0, 8);
    registry.unregister('a');
    registry.unregister('never-registered');
    expect(registry.status().map((r) => r.name)).toEqual(['b', 'c']);
    registry.unregister();
    expect(registry.status()).toEqual([]);
    expect(addon.unmapped.sort()).toEqual(['/a', '/b', '/c']);
    registry.register('a', '/a', 0, 8);
    expect(registry.status('a')).toHaveLength(1);
  });

  it('refuses to register, with a 501 that says why, where the addon is not built or predates shared memory', () => {
    const unbuilt = new SystemSharedMemoryRegistry(() => ({ reason: 'the native addon could not be loaded; tried native/build/Release/serve_fn_npu.node (not built).' }));
    expect(unbuilt.available).toBe(false);
    expect(thrown(() => unbuilt.register('r', '/input', 0, 8))).toMatchObject({
      code: 'SF_ERR_SHM_UNAVAILABLE',
      statusCode: 501,
      message: 'System shared memory is not available: the native addon could not be loaded; tried native/build/Release/serve_fn_npu.node (not built).',
    });
    const older = new SystemSharedMemoryRegistry(() => ({ binding: {} as NpuNativeBinding }));
    expect(older.available).toBe(false);
    expect(thrown(() => older.register('r', '/input', 0, 8))).toMatchObject({ code: 'SF_ERR_SHM_UNAVAILABLE', message: expect.stringContaining('npm run build:native') });
    expect(unbuilt.status()).toEqual([]);
  });
});
