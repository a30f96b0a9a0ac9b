// One ExecuteGraphWithStreamAsync on one slot, off the JS thread. The request points into the
// caller's typed arrays, kept alive until the promise settles; the output bytes become
// ArrayBuffers without another copy.
#ifndef SERVE_FN_NPU_GE_EXECUTE_WORKER_H
#define SERVE_FN_NPU_GE_EXECUTE_WORKER_H

#include <vector>

#include "ge-loaded-graph.h"
#include "promise-worker.h"

class GeModel;

class GeExecuteWorker : public PromiseWorker {
 public:
  GeExecuteWorker(Napi::Env env, GeModel *model, Napi::Object modelObject, GeExecuteRequest request,
                  const std::vector<Napi::Object> &inputObjects);

 protected:
  NpuStatus Run() override;
  Napi::Value Result(Napi::Env env) override;
  void Settled() override;

 private:
  GeModel *model_;
  GeExecuteRequest request_;
  std::vector<GeResult> results_;
};

#endif
