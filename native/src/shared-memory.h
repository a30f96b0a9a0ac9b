// System shared memory (Triton's system_shared_memory extension, docs/protocol/extension_shared_memory.md):
//   mapSharedMemory(key: string, offset: number, byteSize: number): SharedMemoryMapping   [sync]
//   SharedMemoryMapping.buffer: ArrayBuffer over [offset, offset + byteSize) of the object
//   SharedMemoryMapping.unmap(): detaches `buffer`, then munmaps                        [sync]
// The client creates the POSIX object (shm_open O_CREAT + ftruncate); the server only opens it, as
// Triton's shared_memory_manager does. A failure throws an Error whose `reason` is 'open' (no such
// object, or no permission), 'bounds' (the range does not fit the object; `objectSize` says its size)
// or 'map' (mmap refused), and whose `errno` names the system error where there is one.
#ifndef SERVE_FN_NPU_SHARED_MEMORY_H
#define SERVE_FN_NPU_SHARED_MEMORY_H

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "addon-state.h"

// One mmap of a shared-memory object, unmapped once: by unmap(), or when its last owner (the JS
// object and the ArrayBuffer's finaliser) lets go.
class MappedRegion {
 public:
  MappedRegion(void *base, size_t mappedLength, size_t pageOffset, size_t byteSize)
      : base_(base), mappedLength_(mappedLength), pageOffset_(pageOffset), byteSize_(byteSize) {}
  ~MappedRegion() { Unmap(); }
  MappedRegion(const MappedRegion &) = delete;
  MappedRegion &operator=(const MappedRegion &) = delete;

  uint8_t *data() const { return static_cast<uint8_t *>(base_) + pageOffset_; }
  size_t byteSize() const { return byteSize_; }
  void Unmap();

 private:
  void *base_;
  size_t mappedLength_;
  size_t pageOffset_;
  size_t byteSize_;
};

class SharedMemoryMapping : public Napi::ObjectWrap<SharedMemoryMapping> {
 public:
  static Napi::Function DefineClass(Napi::Env env);
  explicit SharedMemoryMapping(const Napi::CallbackInfo &info);

 private:
  Napi::Value Buffer(const Napi::CallbackInfo &info);
  Napi::Value Unmap(const Napi::CallbackInfo &info);

  std::shared_ptr<MappedRegion> region_;
  Napi::Reference<Napi::ArrayBuffer> buffer_;
};

Napi::Value MapSharedMemory(const Napi::CallbackInfo &info);

#endif
