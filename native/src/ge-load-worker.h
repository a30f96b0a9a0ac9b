// loadGeModel({ libraryPath?, deviceId, file? | bytes?, slots, globalOptions, sessionOptions,
//               graphOptions, parserOptions }): Promise<GeModel>  [async]
// Off the JS thread: find AscendCL, take an aclInit share and set the device (DeviceRuntime, as
// the OM path), GEInitialize if first (GeEnvironment), then build every execution slot.
#ifndef SERVE_FN_NPU_GE_LOAD_WORKER_H
#define SERVE_FN_NPU_GE_LOAD_WORKER_H

#include <memory>
#include <string>

#include "addon-state.h"
#include "ge-loaded-graph.h"
#include "promise-worker.h"

class GeLoadWorker : public PromiseWorker {
 public:
  GeLoadWorker(Napi::Env env, AddonState *state, std::string libraryPath, int32_t deviceId, GeLoadRequest request);

 protected:
  NpuStatus Run() override;
  Napi::Value Result(Napi::Env env) override;

 private:
  AddonState *state_;
  std::string libraryPath_;
  int32_t deviceId_;
  GeLoadRequest request_;
  std::unique_ptr<GeLoadedGraph> graph_;
};

Napi::Value LoadGeModel(const Napi::CallbackInfo &info);

#endif
