// convertGeModel({ libraryPath?, deviceId?, file? | bytes?, output, parserOptions, buildOptions }):
//   Promise<{ file }>  [async]
// ATC's job through the IR build API (hicann/ge 8.5.0 inc/external/ge/ge_ir_build.h):
// aclgrphBuildInitialize(global options) -> aclgrphParseONNX(FromMem) -> aclgrphBuildModel ->
// aclgrphSaveModel -> aclgrphBuildFinalize, with an aclInit share and the device set around it.
#ifndef SERVE_FN_NPU_GE_CONVERT_WORKER_H
#define SERVE_FN_NPU_GE_CONVERT_WORKER_H

#include <string>

#include "ge-options.h"
#include "loaded-model.h"
#include "promise-worker.h"

struct GeConvertRequest {
  std::string libraryPath;
  int32_t deviceId = 0;
  ModelSource source;
  std::string output;
  StringOptions parserOptions;
  StringOptions buildOptions;
};

class GeConvertWorker : public PromiseWorker {
 public:
  GeConvertWorker(Napi::Env env, GeConvertRequest request);

 protected:
  NpuStatus Run() override;
  Napi::Value Result(Napi::Env env) override;

 private:
  NpuStatus Build();

  GeConvertRequest request_;
  std::string file_;
};

Napi::Value ConvertGeModel(const Napi::CallbackInfo &info);

#endif
