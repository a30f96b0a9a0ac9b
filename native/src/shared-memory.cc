#include "shared-memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "js-arguments.h"

namespace {

// Offsets and sizes arrive as JS numbers; above 2^53 they are no longer exact.
constexpr double kMaxSafeInteger = 9007199254740991.0;

Napi::Value Fail(Napi::Env env, const char *reason, const std::string &message, int error = 0) {
  Napi::Error err = Napi::Error::New(env, error == 0 ? message : message + ": " + std::strerror(error));
  err.Set("reason", Napi::String::New(env, reason));
  if (error != 0) err.Set("errno", Napi::Number::New(env, error));
  err.ThrowAsJavaScriptException();
  return env.Undefined();
}

// Closes the descriptor on every path: the mapping outlives it (POSIX mmap), as in Triton's manager.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) close(fd_);
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

void MappedRegion::Unmap() {
  if (base_ == nullptr) return;
  munmap(base_, mappedLength_);
  base_ = nullptr;
}

Napi::Function SharedMemoryMapping::DefineClass(Napi::Env env) {
  return ObjectWrap<SharedMemoryMapping>::DefineClass(
      env, "SharedMemoryMapping",
      {InstanceAccessor<&SharedMemoryMapping::Buffer>("buffer"), InstanceMethod<&SharedMemoryMapping::Unmap>("unmap")});
}

SharedMemoryMapping::SharedMemoryMapping(const Napi::CallbackInfo &info) : ObjectWrap<SharedMemoryMapping>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    Napi::TypeError::New(info.Env(), "SharedMemoryMapping objects come from mapSharedMemory()").ThrowAsJavaScriptException();
    return;
  }
  region_ = *info[0].As<Napi::External<std::shared_ptr<MappedRegion>>>().Data();
  // The ArrayBuffer's finaliser holds its own reference, so the pages stay mapped while V8 can
  // still reach them, even after this object is collected.
  auto *owner = new std::shared_ptr<MappedRegion>(region_);
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(
      info.Env(), region_->data(), region_->byteSize(),
      [](Napi::Env, void *, std::shared_ptr<MappedRegion> *held) { delete held; }, owner);
  buffer_ = Napi::Persistent(buffer);
}

Napi::Value SharedMemoryMapping::Buffer(const Napi::CallbackInfo &info) {
  if (buffer_.IsEmpty()) return info.Env().Undefined();
  return buffer_.Value();
}

// Detaching first turns every view over the buffer into a zero-length one, so no JS access can
// reach the pages once munmap has returned them.
Napi::Value SharedMemoryMapping::Unmap(const Napi::CallbackInfo &info) {
  if (!buffer_.IsEmpty()) {
    buffer_.Value().Detach();
    buffer_.Reset();
  }
  region_->Unmap();
  return info.Env().Undefined();
}

Napi::Value MapSharedMemory(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  auto *state = static_cast<AddonState *>(info.Data());
  if (!info[0].IsString()) {
    Napi::TypeError::New(env, "mapSharedMemory(key, offset, byteSize): key must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string key = info[0].As<Napi::String>().Utf8Value();
  uint64_t offset = 0;
  uint64_t byteSize = 0;
  if (!WholeNumber(env, info[1], "offset", kMaxSafeInteger, &offset)) return env.Undefined();
  if (!WholeNumber(env, info[2], "byteSize", kMaxSafeInteger, &byteSize)) return env.Undefined();
  if (byteSize == 0) {
    Napi::RangeError::New(env, "byteSize must be at least 1").ThrowAsJavaScriptException();
    return env.Undefined();
  }

  Descriptor fd(shm_open(key.c_str(), O_RDWR, 0));
  if (fd.get() < 0) return Fail(env, "open", "shm_open('" + key + "')", errno);
  struct stat object;
  if (fstat(fd.get(), &object) != 0) return Fail(env, "open", "fstat('" + key + "')", errno);
  uint64_t objectSize = object.st_size < 0 ? 0 : static_cast<uint64_t>(object.st_size);
  // Written so that neither side can overflow: offset <= objectSize is checked first.
  if (offset > objectSize || byteSize > objectSize - offset) {
    Napi::Error err = Napi::Error::New(env, "[" + std::to_string(offset) + ", " + std::to_string(offset + byteSize) +
                                                ") does not fit in '" + key + "' of " + std::to_string(objectSize) + " bytes");
    err.Set("reason", Napi::String::New(env, "bounds"));
    err.Set("objectSize", Napi::Number::New(env, static_cast<double>(objectSize)));
    err.ThrowAsJavaScriptException();
    return env.Undefined();
  }

  // mmap needs a page-aligned file offset; the region starts pageOffset bytes into the mapping.
  uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t alignedOffset = offset - offset % page;
  size_t pageOffset = static_cast<size_t>(offset - alignedOffset);
  size_t mappedLength = pageOffset + static_cast<size_t>(byteSize);
  void *base = mmap(nullptr, mappedLength, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), static_cast<off_t>(alignedOffset));
  if (base == MAP_FAILED) return Fail(env, "map", "mmap('" + key + "')", errno);

  auto region = std::make_shared<MappedRegion>(base, mappedLength, pageOffset, static_cast<size_t>(byteSize));
  return state->sharedMemoryMappingConstructor.New({Napi::External<std::shared_ptr<MappedRegion>>::New(env, &region)});
}
