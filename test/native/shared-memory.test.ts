import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadNpuBinding, type NpuNativeBinding } from '../../src/backends/npu/native-binding.js';

/** On Linux shm_open('/name') opens /dev/shm/name, so a test creates a client's region as a file there. */
const created: string[] = [];
function createObject(bytes: Uint8Array): string {
  const key = `/serve-fn-test-${randomUUID()}`;
  writeFileSync(`/dev/shm${key}`, bytes);
  created.push(key);
  return key;
}

afterEach(() => {
  for (const key of created.splice(0)) rmSync(`/dev/shm${key}`, { force: true });
});

describe('mapSharedMemory (native/src/shared-memory.cc)', () => {
  let map: NonNullable<NpuNativeBinding['mapSharedMemory']>;

  beforeAll(() => {
    const loaded = loadNpuBinding();
    if ('reason' in loaded) throw new Error(loaded.reason);
    if (!loaded.binding.mapSharedMemory) throw new Error('the addon has no mapSharedMemory: rebuild it with `npm run build:native`');
    map = loaded.binding.mapSharedMemory.bind(loaded.binding);
  });

  it('maps [offset, offset + byteSize) of the object, at an offset that is not page-aligned, both ways', () => {
    const bytes = new Uint8Array(3 * 4096).map((_, i) => i % 251);
    const key = createObject(bytes);
    const mapping = map(key, 4097, 300);
    const view = new Uint8Array(mapping.buffer!);
    expect(view.byteLength).toBe(300);
    expect([...view.subarray(0, 4)]).toEqual([...bytes.subarray(4097, 4101)]);
    view[0] = 0xff;
    view[299] = 0xee;
    const file = readFileSync(`/dev/shm${key}`);
    expect([file[4096], file[4097], file[4396], file[4397]]).toEqual([bytes[4096], 0xff, 0xee, bytes[4397]]);
    mapping.unmap();
  });

  it('detaches the buffer on unmap, so views over it read as empty instead of touching unmapped pages', () => {
    const key = createObject(new Uint8Array(64).fill(7));
    const mapping = map(key, 0, 64);
    const view = new Uint8Array(mapping.buffer!);
    mapping.unmap();
    expect(view.byteLength).toBe(0);
    expect(view[0]).toBeUndefined();
    expect(mapping.buffer).toBeUndefined();
    mapping.unmap();
  });

  it('refuses a range past the end of the object, giving its size, and one whose end overflows', () => {
    const key = createObject(new Uint8Array(100));
    expect(() => map(key, 90, 11)).toThrow(expect.objectContaining({ reason: 'bounds', objectSize: 100, message: `[90, 101) does not fit in '${key}' of 100 bytes` }));
    expect(() => map(key, 101, 1)).toThrow(expect.objectContaining({ reason: 'bounds' }));
    expect(() => map(key, 1, Number.MAX_SAFE_INTEGER)).toThrow(expect.objectContaining({ reason: 'bounds' }));
    expect(() => map(key, 0, 0)).toThrow(RangeError);
    expect(() => map(key, -1, 1)).toThrow(TypeError);
  });

  it('opens and never creates: an object the client did not create is refused with its errno', () => {
    const key = `/serve-fn-test-${randomUUID()}`;
    expect(() => map(key, 0, 8)).toThrow(expect.objectContaining({ reason: 'open', errno: 2 }));
    expect(() => readFileSync(`/dev/shm${key}`)).toThrow(/ENOENT/);
  });
});
