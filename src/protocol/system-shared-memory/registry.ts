import { createError } from '../../errors/index.js';
import { invalidKey, ObjectUnusable, readInto, SHM_DIRECTORY, shmDirectoryExists, withObject, writeAt, type OpenObject } from './shm-object.js';

/** One entry of `$system_shared_memory_status_response` (Triton's extension_shared_memory.md). */
export interface SystemSharedMemoryStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byte_size: number;
}

/** How many regions the clients may register, and how many bytes they may span in all. */
export interface SharedMemoryLimits {
  readonly maxRegions: number;
  readonly maxBytes: number;
}

/**
 * 1024 regions: Triton's clients register one or two per input and output (simple_http_shm_client.py
 * registers two), so this leaves room for hundreds of concurrent clients while the status list stays
 * small. 4 GiB: a request may copy a whole region into the server's memory (an input read from it),
 * so the regions together stay within what one Buffer holds (Node's buffer.constants.MAX_LENGTH).
 */
export const DEFAULT_SHARED_MEMORY_LIMITS: SharedMemoryLimits = { maxRegions: 1024, maxBytes: 4 * 1024 ** 3 };

/**
 * The system shared-memory regions a client registered (Triton's system_shared_memory extension),
 * shared by the HTTP and gRPC protocols. Messages are those of Triton's shared_memory_manager.cc,
 * which clients and their tests match on.
 *
 * Unlike Triton's manager, nothing is mapped: every read and write opens the client's object and
 * copies with pread/pwrite on libuv's pool. An mmap of an object the client later shrinks raises
 * SIGBUS on the first touch past its new end, which kills the process, and a mapping per region
 * spends vm.max_map_count until V8 cannot grow its heap; a copy through a descriptor instead ends
 * short (a read) or is refused by the size check before it (a write), and holds no mapping and no
 * descriptor between requests. The copy is the one the mapping needed anyway: inputs were copied
 * out of it so the model owns them.
 */
export class SystemSharedMemoryRegistry {
  private readonly regions = new Map<string, SystemSharedMemoryStatus>();
  private registeredBytes = 0;
  private directoryExists?: boolean;

  constructor(
    private readonly limits: SharedMemoryLimits = DEFAULT_SHARED_MEMORY_LIMITS,
    private readonly directory: string = SHM_DIRECTORY,
  ) {}

  /** Whether regions can be registered here: the system has a shm directory. */
  get available(): boolean {
    this.directoryExists ??= shmDirectoryExists(this.directory);
    return this.directoryExists;
  }

  async register(name: string, key: string, offset: number, byteSize: number): Promise<void> {
    if (!this.available) throw createError('SF_ERR_SHM_UNAVAILABLE', `this system has no ${this.directory}`);
    if (this.regions.has(name)) throw createError('SF_ERR_SHM_REGION_EXISTS', name);
    if (!isCount(offset)) throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `offset must be a non-negative integer, got ${offset}`);
    if (!isCount(byteSize) || byteSize === 0) throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `byte_size must be a positive integer, got ${byteSize}`);
    const badKey = invalidKey(key);
    if (badKey !== undefined) throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `Unable to open shared memory region: '${key}' (${badKey})`);
    this.checkRoom(name, byteSize);
    let size: number;
    try {
      size = await withObject(this.directory, key, 'read', async (object) => object.size);
    } catch (err) {
      if (!(err instanceof ObjectUnusable)) throw err;
      throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `Unable to open shared memory region: '${key}' (${err.message})`, { cause: err });
    }
    if (offset > size || byteSize > size - offset) {
      throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `invalid args: [${offset}, ${offset + byteSize}) does not fit in '${key}' of ${size} bytes`);
    }
    // Again: another registration may have taken the name or the room while the object was opened.
    this.checkRoom(name, byteSize);
    this.regions.set(name, { name, key, offset, byte_size: byteSize });
    this.registeredBytes += byteSize;
  }

  /** Forgets one region, or every region when no name is given. An unknown name is a no-op, as in Triton. */
  unregister(name?: string): void {
    for (const each of name === undefined ? [...this.regions.keys()] : [name]) {
      const region = this.regions.get(each);
      if (region === undefined) continue;
      this.regions.delete(each);
      this.registeredBytes -= region.byte_size;
    }
  }

  /** The regions as the client registered them: its name, key, offset and size, nothing of the server's. */
  status(name?: string): SystemSharedMemoryStatus[] {
    if (name === undefined) return [...this.regions.values()];
    return [this.region(name)];
  }

  /** Refuses a range [offset, offset + byteSize) outside region `name`, with Triton's messages. */
  check(name: string, offset: number, byteSize: number): SystemSharedMemoryStatus {
    const region = this.region(name);
    const size = region.byte_size;
    if (!isCount(offset) || offset >= size) throw createError('SF_ERR_SHM_OFFSET_INVALID', name);
    if (!isCount(byteSize) || byteSize > size - offset) throw createError('SF_ERR_SHM_BYTE_SIZE_INVALID', name);
    return region;
  }

  /** A copy of the bytes [offset, offset + byteSize) of region `name`, in a buffer of their own. */
  async read(name: string, offset: number, byteSize: number): Promise<Uint8Array> {
    const region = this.check(name, offset, byteSize);
    const start = region.offset + offset;
    return this.use(region, 'read', async ({ handle, size }) => {
      if (size < start + byteSize) throw objectChanged(region, `'${region.key}' is now ${size} bytes, short of [${start}, ${start + byteSize})`);
      // Unpooled, as the runtime may transfer the tensor's buffer to an instance's thread; not zeroed,
      // as a read that does not fill it throws it away.
      const bytes = Buffer.allocUnsafeSlow(byteSize);
      // A read that meets the end early is the object shrinking after the size check.
      const got = await readInto(handle, bytes, start);
      if (got < byteSize) throw objectChanged(region, `'${region.key}' shrank to ${start + got} bytes while it was read`);
      return bytes;
    });
  }

  /**
   * Writes `bytes` at `offset` of region `name`. The size check refuses an object that no longer
   * covers the range; one that shrinks between that check and the write is extended again by the
   * write (pwrite past the end of a tmpfs file grows it), up to the range the client registered:
   * no signal, and nothing outside the client's own object is touched.
   */
  async write(name: string, offset: number, bytes: Uint8Array): Promise<void> {
    const region = this.check(name, offset, bytes.byteLength);
    const start = region.offset + offset;
    await this.use(region, 'write', async ({ handle, size }) => {
      if (size < start + bytes.byteLength) throw objectChanged(region, `'${region.key}' is now ${size} bytes, short of [${start}, ${start + bytes.byteLength})`);
      await writeAt(handle, bytes, start);
    });
  }

  private async use<T>(region: SystemSharedMemoryStatus, mode: 'read' | 'write', copy: (object: OpenObject) => Promise<T>): Promise<T> {
    try {
      return await withObject(this.directory, region.key, mode, copy);
    } catch (err) {
      if (!(err instanceof ObjectUnusable)) throw err;
      throw objectChanged(region, `'${region.key}' cannot be opened (${err.message})`, err);
    }
  }

  /** Refuses a taken name, or a region past the caps, before anything is opened. */
  private checkRoom(name: string, byteSize: number): void {
    if (this.regions.has(name)) throw createError('SF_ERR_SHM_REGION_EXISTS', name);
    const { maxRegions, maxBytes } = this.limits;
    if (this.regions.size >= maxRegions) throw createError('SF_ERR_SHM_LIMIT', name, `${maxRegions} regions`, '--shm-max-regions, SERVE_FN_SHM_MAX_REGIONS');
    if (byteSize > maxBytes - this.registeredBytes) {
      throw createError('SF_ERR_SHM_LIMIT', name, `${maxBytes} bytes in all regions, ${this.registeredBytes} of them registered`, '--shm-max-bytes, SERVE_FN_SHM_MAX_BYTES');
    }
  }

  private region(name: string): SystemSharedMemoryStatus {
    const region = this.regions.get(name);
    if (!region) throw createError('SF_ERR_SHM_REGION_UNKNOWN', name);
    return region;
  }
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function objectChanged(region: SystemSharedMemoryStatus, detail: string, cause?: unknown) {
  return cause === undefined ? createError('SF_ERR_SHM_OBJECT_CHANGED', region.name, detail) : createError('SF_ERR_SHM_OBJECT_CHANGED', region.name, detail, { cause });
}
