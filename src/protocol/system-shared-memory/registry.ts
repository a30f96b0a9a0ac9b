import { createError } from '../../errors/index.js';
import { loadNpuBinding, type NativeSharedMemoryErrorFields, type NativeSharedMemoryMapping, type NpuBindingLoad, type NpuNativeBinding } from '../../backends/npu/native-binding.js';

/** One entry of `$system_shared_memory_status_response` (Triton's extension_shared_memory.md). */
export interface SystemSharedMemoryStatus {
  readonly name: string;
  readonly key: string;
  readonly offset: number;
  readonly byte_size: number;
}

interface Region {
  readonly status: SystemSharedMemoryStatus;
  readonly mapping: NativeSharedMemoryMapping;
}

/**
 * The system shared-memory regions a client registered (Triton's system_shared_memory extension),
 * shared by the HTTP and gRPC protocols. The client creates each POSIX object; registering maps
 * [offset, offset + byte_size) of it through the native addon, and every read or write of a tensor
 * goes through {@link view}, which refuses a range outside the region, so nothing outside the
 * mapping is ever touched. Messages are those of Triton's shared_memory_manager.cc, which clients
 * and their tests match on.
 */
export class SystemSharedMemoryRegistry {
  private readonly regions = new Map<string, Region>();

  constructor(private readonly loadBinding: () => NpuBindingLoad = loadNpuBinding) {}

  /** Whether regions can be mapped here: the native addon is built, with its shared-memory functions. */
  get available(): boolean {
    return typeof this.mapFunction() === 'function';
  }

  register(name: string, key: string, offset: number, byteSize: number): void {
    const map = this.mapFunction();
    if (typeof map === 'string') throw createError('SF_ERR_SHM_UNAVAILABLE', map);
    if (this.regions.has(name)) throw createError('SF_ERR_SHM_REGION_EXISTS', name);
    if (!isCount(offset)) throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `offset must be a non-negative integer, got ${offset}`);
    if (!isCount(byteSize) || byteSize === 0) throw createError('SF_ERR_SHM_REGISTER_FAILED', name, `byte_size must be a positive integer, got ${byteSize}`);
    let mapping: NativeSharedMemoryMapping;
    try {
      mapping = map(key, offset, byteSize);
    } catch (err) {
      throw createError('SF_ERR_SHM_REGISTER_FAILED', name, registerFailure(key, err), { cause: err });
    }
    this.regions.set(name, { status: { name, key, offset, byte_size: byteSize }, mapping });
  }

  /** Unmaps one region, or every region when no name is given. An unknown name is a no-op, as in Triton. */
  unregister(name?: string): void {
    const names = name === undefined ? [...this.regions.keys()] : [name];
    for (const each of names) {
      this.regions.get(each)?.mapping.unmap();
      this.regions.delete(each);
    }
  }

  status(name?: string): SystemSharedMemoryStatus[] {
    if (name === undefined) return [...this.regions.values()].map((r) => r.status);
    return [this.region(name).status];
  }

  /** The bytes [offset, offset + byteSize) of region `name`, over the mapping itself (not a copy). */
  view(name: string, offset: number, byteSize: number): Uint8Array {
    const region = this.region(name);
    const size = region.status.byte_size;
    if (!isCount(offset) || offset >= size) throw createError('SF_ERR_SHM_OFFSET_INVALID', name);
    if (!isCount(byteSize) || byteSize > size - offset) throw createError('SF_ERR_SHM_BYTE_SIZE_INVALID', name);
    return new Uint8Array(region.mapping.buffer as ArrayBuffer, offset, byteSize);
  }

  private region(name: string): Region {
    const region = this.regions.get(name);
    if (!region) throw createError('SF_ERR_SHM_REGION_UNKNOWN', name);
    return region;
  }

  /** The addon's mapSharedMemory, or why there is none. */
  private mapFunction(): NonNullable<NpuNativeBinding['mapSharedMemory']> | string {
    const loaded = this.loadBinding();
    if (!('binding' in loaded)) return loaded.reason;
    // An addon built before this function existed loads, but lacks it.
    if (typeof loaded.binding.mapSharedMemory !== 'function') return 'the native addon was built without it; rebuild it with `npm run build:native`';
    return loaded.binding.mapSharedMemory.bind(loaded.binding);
  }
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** The part after "failed to register shared memory region 'name': ", in Triton's words where it has them. */
function registerFailure(key: string, err: unknown): string {
  const fields = err as Partial<NativeSharedMemoryErrorFields> & Error;
  if (fields.reason === 'open') return `Unable to open shared memory region: '${key}' (${fields.message})`;
  if (fields.reason === 'bounds') return `invalid args: ${fields.message}`;
  return fields.message;
}
