// convertGeModel({ file? | bytes?, output, parserOptions, buildOptions }): Promise<{ file }>  [async]
// ATC's job through the IR build API (hicann/ge 8.5.0 inc/external/ge/ge_ir_build.h):
// aclgrphBuildInitialize(global options) -> aclgrphParseONNX(FromMem) -> aclgrphBuildModel ->
// aclgrphSaveModel -> aclgrphBuildFinalize, without AscendCL or a device, as ATC runs it. Refused
// while GE models are loaded in the process (GeEnvironment::BeginConversion says why).
#ifndef SERVE_FN_NPU_GE_CONVERT_WORKER_H
#define SERVE_FN_NPU_GE_CONVERT_WORKER_H

#include <string>

#include "ge-options.h"
#include "loaded-model.h"
#include "promise-worker.h"

struct GeConvertRequest {
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
