// loadModel({ libraryPath?, deviceId, file? | bytes? }): Promise<OmModel>  [async]
// Off the JS thread: find AscendCL, take an aclInit share, set the device, create the instance's
// context and stream, load the model and allocate its buffers.
#ifndef SERVE_FN_NPU_LOAD_WORKER_H
#define SERVE_FN_NPU_LOAD_WORKER_H

#include <napi.h>

#include <memory>
#include <string>

#include "addon-state.h"
#include "loaded-model.h"

struct LoadBaton {
  std::string libraryPath;
  int32_t deviceId = 0;
  ModelSource source;
  std::unique_ptr<LoadedModel> model;
  NpuStatus status;
};

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, AddonState *state, LoadBaton baton);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  AddonState *state_;
  LoadBaton baton_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value LoadModel(const Napi::CallbackInfo &info);

#endif
