// One model execution off the JS thread: the request points into the caller's typed arrays (kept
// alive until the promise settles); the output bytes become ArrayBuffers without another copy.
#ifndef SERVE_FN_NPU_EXECUTE_WORKER_H
#define SERVE_FN_NPU_EXECUTE_WORKER_H

#include <vector>

#include "loaded-model.h"
#include "promise-worker.h"

class OmModel;

class ExecuteWorker : public PromiseWorker {
 public:
  ExecuteWorker(Napi::Env env, OmModel *model, Napi::Object modelObject, const std::vector<Napi::TypedArray> &inputs, uint64_t batch);

 protected:
  NpuStatus Run() override;
  Napi::Value Result(Napi::Env env) override;
  void Settled() override;

 private:
  OmModel *model_;
  ExecuteRequest request_;
  std::vector<OutputBytes> outputs_;
};

#endif
