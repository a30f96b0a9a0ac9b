#include "load-worker.h"

#include "js-arguments.h"
#include "om-model.h"

LoadWorker::LoadWorker(Napi::Env env, AddonState *state, LoadRequest request)
    : PromiseWorker(env, "serve-fn:npu:load"), state_(state), request_(std::move(request)) {}

NpuStatus LoadWorker::Run() {
  std::unique_ptr<DeviceRuntime> runtime;
  NpuStatus status = DeviceRuntime::Open(request_.libraryPath, request_.deviceId, &runtime);
  if (status.ok) status = LoadedModel::Load(std::move(runtime), request_.source, &model_);
  return status;
}

Napi::Value LoadWorker::Result(Napi::Env env) { return OmModel::Wrap(env, state_, std::move(model_)); }

Napi::Value LoadModel(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object options;
  LoadRequest request;
  uint64_t deviceId = 0;
  if (!OptionsObject(env, info[0], "loadModel", &options) ||
      !OptionalString(env, options.Get("libraryPath"), "libraryPath", &request.libraryPath) ||
      !WholeNumber(env, options.Get("deviceId"), "deviceId", INT32_MAX, &deviceId) ||
      !ModelFileOrBytes(env, options, &request.source.file, &request.source.bytes)) {
    return env.Undefined();
  }
  request.deviceId = static_cast<int32_t>(deviceId);
  return (new LoadWorker(env, static_cast<AddonState *>(info.Data()), std::move(request)))->Start();
}
