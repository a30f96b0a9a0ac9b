// loadModel({ libraryPath?, deviceId, file? | bytes? }): Promise<OmModel>  [async]
// Off the JS thread: find AscendCL, take an aclInit share, set the device, create the instance's
// context and stream, load the model and allocate its buffers.
#ifndef SERVE_FN_NPU_LOAD_WORKER_H
#define SERVE_FN_NPU_LOAD_WORKER_H

#include <memory>
#include <string>

#include "addon-state.h"
#include "loaded-model.h"
#include "promise-worker.h"

struct LoadRequest {
  std::string libraryPath;
  int32_t deviceId = 0;
  ModelSource source;
};

class LoadWorker : public PromiseWorker {
 public:
  LoadWorker(Napi::Env env, AddonState *state, LoadRequest request);

 protected:
  NpuStatus Run() override;
  Napi::Value Result(Napi::Env env) override;

 private:
  AddonState *state_;
  LoadRequest request_;
  std::unique_ptr<LoadedModel> model_;
};

Napi::Value LoadModel(const Napi::CallbackInfo &info);

#endif
