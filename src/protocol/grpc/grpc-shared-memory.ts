import { createError } from '../../errors/index.js';
import type { SystemSharedMemoryRegistry } from '../system-shared-memory/registry.js';

/** The requests of grpc_service.proto's shared-memory RPCs as proto-loader hands them over (`longs: String`, `defaults: false`). */
interface RegionRequest {
  readonly name?: string;
}

interface SystemRegisterRequest extends RegionRequest {
  readonly key?: string;
  readonly offset?: string | number;
  readonly byte_size?: string | number;
}

/**
 * The answers of Triton's shared-memory RPCs over the registry HTTP uses (Triton's
 * extension_shared_memory.md): System* status, register and unregister; Cuda* as a Triton built
 * without GPUs answers, nothing registered and registering refused (UNIMPLEMENTED). An empty name,
 * proto3's "not given", means every region.
 */
export function grpcSharedMemoryAnswers(registry: SystemSharedMemoryRegistry): Record<string, (request: never) => unknown> {
  return {
    SystemSharedMemoryStatus: (request: RegionRequest) => ({
      regions: Object.fromEntries(registry.status(request.name || undefined).map((r) => [r.name, r])),
    }),
    SystemSharedMemoryRegister: async (request: SystemRegisterRequest) => {
      if (!request.name) throw createError('SF_ERR_BAD_REQUEST', "'region name' is necessary to register system shared memory region");
      await registry.register(request.name, request.key ?? '', Number(request.offset ?? 0), Number(request.byte_size ?? 0));
      return {};
    },
    SystemSharedMemoryUnregister: (request: RegionRequest) => {
      registry.unregister(request.name || undefined);
      return {};
    },
    CudaSharedMemoryStatus: (request: RegionRequest) => {
      if (request.name) throw createError('SF_ERR_SHM_REGION_UNKNOWN', request.name);
      return { regions: {} };
    },
    CudaSharedMemoryRegister: (request: RegionRequest) => {
      throw createError('SF_ERR_UNSUPPORTED', `failed to register CUDA shared memory region: '${request.name ?? ''}', GPUs not supported`);
    },
    CudaSharedMemoryUnregister: () => ({}),
  };
}
