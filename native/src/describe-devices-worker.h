// describeDevices(libraryPath?): Promise<{ libraryPath, variant, version, deviceCount, devices }>
// [async] for `serve-fn doctor`: takes an aclInit share, counts devices and reads each device's
// memory (aclrtSetDevice / aclrtGetMemInfo / aclrtResetDevice) off the JS thread.
#ifndef SERVE_FN_NPU_DESCRIBE_DEVICES_WORKER_H
#define SERVE_FN_NPU_DESCRIBE_DEVICES_WORKER_H

#include <string>
#include <vector>

#include "promise-worker.h"

struct DeviceMemory {
  int32_t id;
  size_t total;
  size_t free;
};

struct DescribeDevicesBaton {
  std::string requestedPath;
  std::string libraryPath;
  std::string variant;
  std::string version;  // empty when the library has no aclrtGetVersion
  std::vector<DeviceMemory> devices;
};

class DescribeDevicesWorker : public PromiseWorker {
 public:
  DescribeDevicesWorker(Napi::Env env, std::string libraryPath);

 protected:
  NpuStatus Run() override;
  Napi::Value Result(Napi::Env env) override;

 private:
  DescribeDevicesBaton baton_;
};

Napi::Value DescribeDevices(const Napi::CallbackInfo &info);

#endif
