#include "device-runtime.h"

DeviceRuntime::DeviceRuntime(std::shared_ptr<AclLibrary> library, int32_t deviceId)
    : library_(std::move(library)), deviceId_(deviceId) {}

DeviceRuntime::~DeviceRuntime() { Release(); }

NpuStatus DeviceRuntime::Create(std::shared_ptr<AclLibrary> library, int32_t deviceId, std::unique_ptr<DeviceRuntime> *out,
                                Stream stream) {
  std::unique_ptr<DeviceRuntime> runtime(new DeviceRuntime(std::move(library), deviceId));
  const AclApi &api = runtime->api();
  NpuStatus status = runtime->library_->AcquireInit();
  runtime->initHeld_ = status.ok;
  if (status.ok) status = ACL_CALL(api, aclrtSetDevice, (deviceId));
  runtime->deviceSet_ = status.ok;
  if (status.ok) status = ACL_CALL(api, aclrtCreateContext, (&runtime->context_, deviceId));
  if (status.ok && stream == Stream::kCreate) status = ACL_CALL(api, aclrtCreateStream, (&runtime->stream_));
  if (status.ok) *out = std::move(runtime);
  return status;
}

NpuStatus DeviceRuntime::Open(const std::string &libraryPath, int32_t deviceId, std::unique_ptr<DeviceRuntime> *out) {
  AclLibrary::OpenResult opened = AclLibrary::Open(libraryPath);
  if (!opened.library) return opened.NotFound();
  return Create(opened.library, deviceId, out);
}

NpuStatus DeviceRuntime::MakeCurrent() const { return ACL_CALL(api(), aclrtSetCurrentContext, (context_)); }

NpuStatus DeviceRuntime::Release() {
  const AclApi &api = library_->api();
  NpuStatus first;
  if (context_) KeepFirstFailure(&first, MakeCurrent());
  if (stream_) {
    KeepFirstFailure(&first, ACL_CALL(api, aclrtSynchronizeStream, (stream_)));
    KeepFirstFailure(&first, ACL_CALL(api, aclrtDestroyStream, (stream_)));
    stream_ = nullptr;
  }
  if (context_) {
    KeepFirstFailure(&first, ACL_CALL(api, aclrtDestroyContext, (context_)));
    context_ = nullptr;
  }
  if (deviceSet_) {
    KeepFirstFailure(&first, ACL_CALL(api, aclrtResetDevice, (deviceId_)));
    deviceSet_ = false;
  }
  if (initHeld_) {
    KeepFirstFailure(&first, library_->ReleaseInit());
    initHeld_ = false;
  }
  return first;
}
