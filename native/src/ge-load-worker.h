// loadGeModel({ libraryPath?, deviceId, file? | bytes?, slots, globalOptions, sessionOptions,
//               graphOptions, parserOptions }): Promise<GeModel>  [async]
// Off the JS thread: find AscendCL, take an aclInit share and set the device (DeviceRuntime, as
// the OM path), GEInitialize if first (GeEnvironment), then build every execution slot.
#ifndef SERVE_FN_NPU_GE_LOAD_WORKER_H
#define SERVE_FN_NPU_GE_LOAD_WORKER_H

#include <napi.h>

#include <memory>
#include <string>

#include "addon-state.h"
#include "ge-loaded-graph.h"

class GeLoadWorker : public Napi::AsyncWorker {
 public:
  GeLoadWorker(Napi::Env env, AddonState *state, std::string libraryPath, int32_t deviceId, GeLoadRequest request);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  AddonState *state_;
  std::string libraryPath_;
  int32_t deviceId_;
  GeLoadRequest request_;
  std::unique_ptr<GeLoadedGraph> graph_;
  NpuStatus status_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value LoadGeModel(const Napi::CallbackInfo &info);

#endif
