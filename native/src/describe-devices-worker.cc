#include "describe-devices-worker.h"

#include "acl-library.h"
#include "js-arguments.h"

DescribeDevicesWorker::DescribeDevicesWorker(Napi::Env env, std::string libraryPath)
    : PromiseWorker(env, "serve-fn:npu:describe-devices") {
  baton_.requestedPath = std::move(libraryPath);
}

namespace {

NpuStatus ReadDevices(const AclApi &api, DescribeDevicesBaton *baton) {
  uint32_t count = 0;
  NpuStatus status = ACL_CALL(api, aclrtGetDeviceCount, (&count));
  for (uint32_t id = 0; status.ok && id < count; id++) {
    DeviceMemory memory{static_cast<int32_t>(id), 0, 0};
    status = ACL_CALL(api, aclrtSetDevice, (memory.id));
    if (!status.ok) break;
    status = ACL_CALL(api, aclrtGetMemInfo, (ACL_HBM_MEM, &memory.free, &memory.total));
    NpuStatus reset = ACL_CALL(api, aclrtResetDevice, (memory.id));
    if (status.ok) status = reset;
    baton->devices.push_back(memory);
  }
  int32_t major = 0, minor = 0, patch = 0;
  if (status.ok && api.aclrtGetVersion && api.aclrtGetVersion(&major, &minor, &patch) == ACL_SUCCESS) {
    baton->version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  return status;
}

}  // namespace

NpuStatus DescribeDevicesWorker::Run() {
  AclLibrary::OpenResult opened = AclLibrary::Open(baton_.requestedPath);
  if (!opened.library) return opened.NotFound();
  baton_.libraryPath = opened.library->path();
  baton_.variant = opened.library->variant();
  NpuStatus status = opened.library->AcquireInit();
  if (!status.ok) return status;
  status = ReadDevices(opened.library->api(), &baton_);
  NpuStatus released = opened.library->ReleaseInit();
  return status.ok ? released : status;
}

Napi::Value DescribeDevicesWorker::Result(Napi::Env env) {
  Napi::Object report = Napi::Object::New(env);
  report.Set("libraryPath", Napi::String::New(env, baton_.libraryPath));
  report.Set("variant", Napi::String::New(env, baton_.variant));
  report.Set("version", baton_.version.empty() ? env.Null() : Napi::String::New(env, baton_.version));
  report.Set("deviceCount", Napi::Number::New(env, static_cast<double>(baton_.devices.size())));
  Napi::Array devices = Napi::Array::New(env, baton_.devices.size());
  for (uint32_t i = 0; i < baton_.devices.size(); i++) {
    Napi::Object device = Napi::Object::New(env);
    device.Set("id", Napi::Number::New(env, baton_.devices[i].id));
    device.Set("memoryTotal", Napi::Number::New(env, static_cast<double>(baton_.devices[i].total)));
    device.Set("memoryFree", Napi::Number::New(env, static_cast<double>(baton_.devices[i].free)));
    devices.Set(i, device);
  }
  report.Set("devices", devices);
  return report;
}

Napi::Value DescribeDevices(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::string path;
  if (!OptionalString(env, info[0], "libraryPath", &path)) return env.Undefined();
  return (new DescribeDevicesWorker(env, path))->Start();
}
