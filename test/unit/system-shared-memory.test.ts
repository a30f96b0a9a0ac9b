import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SystemSharedMemoryRegistry } from '../../src/protocol/system-shared-memory/registry.js';
import { thrown } from '../helpers/thrown.js';

/** A client's object: on Linux shm_open('/name') is /dev/shm/name. */
const created: string[] = [];
function createObject(bytes: Uint8Array | number): string {
  const key = `/serve-fn-unit-${randomUUID()}`;
  writeFileSync(`/dev/shm${key}`, typeof bytes === 'number' ? Buffer.alloc(bytes) : bytes);
  created.push(key);
  return key;
}

afterEach(() => {
  vi.restoreAllMocks();
  for (const key of created.splice(0)) rmSync(`/dev/shm${key}`, { force: true });
});

async function rejected(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => undefined, (err: unknown) => err);
}

/** The prototype of the FileHandle objects fs/promises opens, to step in between the registry's size check and its copy. */
async function fileHandlePrototype(): Promise<{ read: (...args: unknown[]) => Promise<unknown>; write: (...args: unknown[]) => Promise<unknown> }> {
  const handle = await open('/dev/null');
  await handle.close();
  return Object.getPrototypeOf(handle);
}

describe('SystemSharedMemoryRegistry', () => {
  it("registers a region and reports it in Triton's status shape, with nothing but what the client gave", async () => {
    const key = createObject(128);
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('input_data', key, 64, 64);
    expect(registry.status()).toEqual([{ name: 'input_data', key, offset: 64, byte_size: 64 }]);
    expect(registry.status('input_data')).toEqual([{ name: 'input_data', key, offset: 64, byte_size: 64 }]);
    expect(Object.keys(registry.status()[0]).sort()).toEqual(['byte_size', 'key', 'name', 'offset']);
    expect(registry.available).toBe(true);
  });

  it("refuses a region registered twice, with Triton's message, and keeps the first", async () => {
    const [input, other] = [createObject(128), createObject(16)];
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('input_data', input, 0, 128);
    const err = await rejected(registry.register('input_data', other, 0, 16));
    expect(err).toMatchObject({ code: 'SF_ERR_SHM_REGION_EXISTS', statusCode: 400, message: "shared memory region 'input_data' already in manager" });
    expect(registry.status('input_data')[0].key).toBe(input);
  });

  it('registers one of two concurrent registrations of a name', async () => {
    const key = createObject(16);
    const registry = new SystemSharedMemoryRegistry();
    const results = await Promise.allSettled([registry.register('r', key, 0, 16), registry.register('r', key, 0, 8)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(registry.status()).toHaveLength(1);
  });

  it('refuses a range past the end of the object and an object that does not exist, keeping the cause', async () => {
    const key = createObject(128);
    const registry = new SystemSharedMemoryRegistry();
    expect(await rejected(registry.register('r', key, 64, 65))).toMatchObject({
      code: 'SF_ERR_SHM_REGISTER_FAILED',
      statusCode: 400,
      message: `failed to register shared memory region 'r': invalid args: [64, 129) does not fit in '${key}' of 128 bytes`,
    });
    const missing = await rejected(registry.register('r', '/serve-fn-unit-missing', 0, 8));
    expect(missing).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED', message: "failed to register shared memory region 'r': Unable to open shared memory region: '/serve-fn-unit-missing' (no such object)" });
    expect((missing as Error).cause).toBeInstanceOf(Error);
    expect(await rejected(registry.register('r', key, -1, 8))).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED' });
    expect(await rejected(registry.register('r', key, 0, 0))).toMatchObject({ code: 'SF_ERR_SHM_REGISTER_FAILED', message: expect.stringContaining('byte_size must be a positive integer') });
    expect(registry.status()).toEqual([]);
  });

  it('keeps every key inside the shm directory: a POSIX shm name only, and no symbolic link followed', async () => {
    const registry = new SystemSharedMemoryRegistry();
    for (const key of ['input', '/', '/a/b', '/.', '/..', '//etc/passwd', '/../etc/passwd', '/a\0b']) {
      expect(await rejected(registry.register('r', key, 0, 1))).toMatchObject({
        code: 'SF_ERR_SHM_REGISTER_FAILED',
        message: `failed to register shared memory region 'r': Unable to open shared memory region: '${key}' (a POSIX shared-memory name is '/' followed by a name without '/')`,
      });
    }
    const outside = mkdtempSync(join(tmpdir(), 'serve-fn-shm-'));
    writeFileSync(join(outside, 'secret'), 'not shared');
    const link = `/serve-fn-unit-link-${randomUUID()}`;
    symlinkSync(join(outside, 'secret'), `/dev/shm${link}`);
    created.push(link);
    try {
      expect(await rejected(registry.register('r', link, 0, 1))).toMatchObject({ message: expect.stringContaining('a symbolic link, which is not followed') });
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
    expect(registry.status()).toEqual([]);
  });

  it("checks ranges only inside a region: a bad offset or a range past its end is refused with Triton's messages", async () => {
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('r', createObject(128), 0, 64);
    expect(registry.check('r', 16, 48).byte_size).toBe(64);
    expect(thrown(() => registry.check('r', 64, 1))).toMatchObject({ code: 'SF_ERR_SHM_OFFSET_INVALID', statusCode: 400, message: "Invalid offset for shared memory region: 'r'" });
    expect(thrown(() => registry.check('r', 16, 49))).toMatchObject({ code: 'SF_ERR_SHM_BYTE_SIZE_INVALID', message: "Invalid offset + byte size for shared memory region: 'r'" });
    expect(thrown(() => registry.check('r', 1, Number.MAX_SAFE_INTEGER))).toMatchObject({ code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' });
    expect(thrown(() => registry.check('r', -1, 1))).toMatchObject({ code: 'SF_ERR_SHM_OFFSET_INVALID' });
    expect(await rejected(registry.read('r', 16, 49))).toMatchObject({ code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' });
  });

  it("answers an unknown region with Triton's message, for status, check and read", async () => {
    const registry = new SystemSharedMemoryRegistry();
    expect(thrown(() => registry.status('nope'))).toMatchObject({ code: 'SF_ERR_SHM_REGION_UNKNOWN', statusCode: 400, message: "Unable to find shared memory region: 'nope'" });
    expect(thrown(() => registry.check('nope', 0, 1))).toMatchObject({ code: 'SF_ERR_SHM_REGION_UNKNOWN' });
    expect(await rejected(registry.read('nope', 0, 1))).toMatchObject({ code: 'SF_ERR_SHM_REGION_UNKNOWN' });
  });

  it('reads a copy of a range and writes a range, relative to the region', async () => {
    const key = createObject(Uint8Array.from({ length: 32 }, (_, i) => i));
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('r', key, 8, 16);
    const bytes = await registry.read('r', 4, 4);
    expect([...bytes]).toEqual([12, 13, 14, 15]);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.buffer.byteLength).toBe(4);
    await registry.write('r', 0, Uint8Array.of(100, 101));
    expect([...readFileSync(`/dev/shm${key}`).subarray(6, 12)]).toEqual([6, 7, 100, 101, 10, 11]);
  });

  it('unregisters one region, or all of them; an unknown name is a no-op as in Triton', async () => {
    const registry = new SystemSharedMemoryRegistry();
    for (const name of ['a', 'b', 'c']) await registry.register(name, createObject(8), 0, 8);
    registry.unregister('a');
    registry.unregister('never-registered');
    expect(registry.status().map((r) => r.name)).toEqual(['b', 'c']);
    registry.unregister();
    expect(registry.status()).toEqual([]);
    await registry.register('a', createObject(8), 0, 8);
    expect(registry.status('a')).toHaveLength(1);
  });

  it('refuses to register, with a 501 that says why, where the system has no shm directory', async () => {
    const registry = new SystemSharedMemoryRegistry(undefined, '/nonexistent-shm-directory');
    expect(registry.available).toBe(false);
    expect(await rejected(registry.register('r', '/input', 0, 8))).toMatchObject({
      code: 'SF_ERR_SHM_UNAVAILABLE',
      statusCode: 501,
      message: 'System shared memory is not available: this system has no /nonexistent-shm-directory',
    });
    expect(registry.status()).toEqual([]);
  });
});

describe('SystemSharedMemoryRegistry caps', () => {
  it('refuses a region past the count cap with a 400 naming the flag and the variable, and takes one again once one is unregistered', async () => {
    const key = createObject(8);
    const registry = new SystemSharedMemoryRegistry({ maxRegions: 2, maxBytes: 1024 });
    await registry.register('a', key, 0, 1);
    await registry.register('b', key, 0, 1);
    expect(await rejected(registry.register('c', key, 0, 1))).toMatchObject({
      code: 'SF_ERR_SHM_LIMIT',
      statusCode: 400,
      message: "failed to register shared memory region 'c': the server holds at most 2 regions (--shm-max-regions, SERVE_FN_SHM_MAX_REGIONS)",
    });
    registry.unregister('a');
    await registry.register('c', key, 0, 1);
    expect(registry.status().map((r) => r.name)).toEqual(['b', 'c']);
  });

  it('refuses a region past the byte cap, counting the registered regions, and frees their bytes on unregister', async () => {
    const key = createObject(64);
    const registry = new SystemSharedMemoryRegistry({ maxRegions: 10, maxBytes: 100 });
    await registry.register('a', key, 0, 64);
    expect(await rejected(registry.register('b', key, 0, 37))).toMatchObject({
      code: 'SF_ERR_SHM_LIMIT',
      message: "failed to register shared memory region 'b': the server holds at most 100 bytes in all regions, 64 of them registered (--shm-max-bytes, SERVE_FN_SHM_MAX_BYTES)",
    });
    await registry.register('b', key, 0, 36);
    registry.unregister();
    await registry.register('c', key, 0, 64);
    expect(registry.status()).toHaveLength(1);
  });

  it('holds no mapping per region, so registrations cannot use up vm.max_map_count', async () => {
    const key = createObject(4096);
    const registry = new SystemSharedMemoryRegistry({ maxRegions: 2000, maxBytes: 2000 });
    const mappings = (): number => readFileSync('/proc/self/maps', 'utf8').split('\n').length;
    const before = mappings();
    for (let i = 0; i < 2000; i += 1) await registry.register(`r${i}`, key, i, 1);
    expect(registry.status()).toHaveLength(2000);
    // The heap may map a few more pages meanwhile; a mapping per region would add 2000 lines.
    expect(mappings() - before).toBeLessThan(500);
  });

  it('holds the caps under concurrent registrations, which all open their objects at once', async () => {
    const key = createObject(8);
    const registry = new SystemSharedMemoryRegistry({ maxRegions: 3, maxBytes: 1024 });
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => registry.register(`r${i}`, key, 0, 1)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(registry.status()).toHaveLength(3);
  });
});

describe('SystemSharedMemoryRegistry: an object the client shrinks or removes', () => {
  it('refuses a read and a write past the end of a shrunk object with a 400, and serves the range again once it is grown back', async () => {
    const key = createObject(64 * 1024);
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('r', key, 0, 64 * 1024);
    for (const size of [0, 4096]) {
      truncateSync(`/dev/shm${key}`, size);
      expect(await rejected(registry.read('r', 8192, 64))).toMatchObject({
        code: 'SF_ERR_SHM_OBJECT_CHANGED',
        statusCode: 400,
        message: `shared memory region 'r' no longer covers its range: '${key}' is now ${size} bytes, short of [8192, 8256)`,
      });
      expect(await rejected(registry.write('r', 8192, new Uint8Array(64)))).toMatchObject({ code: 'SF_ERR_SHM_OBJECT_CHANGED' });
      expect(statSync(`/dev/shm${key}`).size).toBe(size);
    }
    truncateSync(`/dev/shm${key}`, 64 * 1024);
    expect((await registry.read('r', 8192, 64)).byteLength).toBe(64);
  });

  it('refuses a read that meets the end because the object shrank between the size check and the copy', async () => {
    const key = createObject(64 * 1024);
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('r', key, 0, 64 * 1024);
    const prototype = await fileHandlePrototype();
    const read = prototype.read;
    vi.spyOn(prototype, 'read').mockImplementation(function (this: unknown, ...args: unknown[]) {
      truncateSync(`/dev/shm${key}`, 4096);
      return read.apply(this, args);
    });
    expect(await rejected(registry.read('r', 0, 8192))).toMatchObject({
      code: 'SF_ERR_SHM_OBJECT_CHANGED',
      message: `shared memory region 'r' no longer covers its range: '${key}' shrank to 4096 bytes while it was read`,
    });
  });

  it('lets a write that races a shrink grow the object back to the registered range, and no further', async () => {
    const key = createObject(64 * 1024);
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('r', key, 0, 64 * 1024);
    const prototype = await fileHandlePrototype();
    const write = prototype.write;
    vi.spyOn(prototype, 'write').mockImplementation(function (this: unknown, ...args: unknown[]) {
      truncateSync(`/dev/shm${key}`, 0);
      return write.apply(this, args);
    });
    await registry.write('r', 8192, new Uint8Array(64).fill(7));
    const object = readFileSync(`/dev/shm${key}`);
    expect(object.byteLength).toBe(8256);
    expect([...object.subarray(8192)]).toEqual(new Array(64).fill(7));
  });

  it('refuses a read from an object the client removed, keeping the cause', async () => {
    const key = createObject(64);
    const registry = new SystemSharedMemoryRegistry();
    await registry.register('r', key, 0, 64);
    rmSync(`/dev/shm${key}`);
    const err = await rejected(registry.read('r', 0, 8));
    expect(err).toMatchObject({ code: 'SF_ERR_SHM_OBJECT_CHANGED', message: `shared memory region 'r' no longer covers its range: '${key}' cannot be opened (no such object)` });
    expect((err as Error).cause).toBeInstanceOf(Error);
  });
});
