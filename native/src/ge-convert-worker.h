// convertGeModel({ libraryPath?, deviceId?, file? | bytes?, output, parserOptions, buildOptions }):
//   Promise<{ file }>  [async]
// ATC's job through the IR build API (hicann/ge 8.5.0 inc/external/ge/ge_ir_build.h):
// aclgrphBuildInitialize(global options) -> aclgrphParseONNX(FromMem) -> aclgrphBuildModel ->
// aclgrphSaveModel -> aclgrphBuildFinalize, with an aclInit share and the device set around it.
#ifndef SERVE_FN_NPU_GE_CONVERT_WORKER_H
#define SERVE_FN_NPU_GE_CONVERT_WORKER_H

#include <napi.h>

#include <string>

#include "ge-options.h"
#include "loaded-model.h"

struct GeConvertRequest {
  std::string libraryPath;
  int32_t deviceId = 0;
  ModelSource source;
  std::string output;
  StringOptions parserOptions;
  StringOptions buildOptions;
};

class GeConvertWorker : public Napi::AsyncWorker {
 public:
  GeConvertWorker(Napi::Env env, GeConvertRequest request);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  NpuStatus Build();

  GeConvertRequest request_;
  std::string file_;
  NpuStatus status_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value ConvertGeModel(const Napi::CallbackInfo &info);

#endif
