// One model instance's place on a device: the process-wide aclInit share, the device set, an own
// context and one stream. Every worker task calls MakeCurrent() first, because libuv pool threads
// have no current context and the model must stay in the context it was loaded in (CANN AscendCL samples' call order).
#ifndef SERVE_FN_NPU_DEVICE_RUNTIME_H
#define SERVE_FN_NPU_DEVICE_RUNTIME_H

#include <memory>
#include <string>

#include "acl-library.h"

class DeviceRuntime {
 public:
  // Whether the runtime creates its stream: the GE route creates one per execution slot instead,
  // after that slot's CompileGraph, and so has none here.
  enum class Stream { kCreate, kNone };

  // aclInit (first holder only) -> aclrtSetDevice -> aclrtCreateContext -> aclrtCreateStream.
  static NpuStatus Create(std::shared_ptr<AclLibrary> library, int32_t deviceId, std::unique_ptr<DeviceRuntime> *out,
                          Stream stream = Stream::kCreate);
  // Finds AscendCL (an explicit path, else the usual places: AclLibrary::Open), then Create with
  // a stream: only the OM route opens a runtime this way.
  static NpuStatus Open(const std::string &libraryPath, int32_t deviceId, std::unique_ptr<DeviceRuntime> *out);

  ~DeviceRuntime();
  DeviceRuntime(const DeviceRuntime &) = delete;
  DeviceRuntime &operator=(const DeviceRuntime &) = delete;

  NpuStatus MakeCurrent() const;
  // Stream, context, device and init share, in that order; reports the first failure but always
  // releases everything.
  NpuStatus Release();

  const AclApi &api() const { return library_->api(); }
  aclrtStream stream() const { return stream_; }
  int32_t deviceId() const { return deviceId_; }

 private:
  DeviceRuntime(std::shared_ptr<AclLibrary> library, int32_t deviceId);

  std::shared_ptr<AclLibrary> library_;
  int32_t deviceId_;
  bool initHeld_ = false;
  bool deviceSet_ = false;
  aclrtContext context_ = nullptr;
  aclrtStream stream_ = nullptr;
};

#endif
