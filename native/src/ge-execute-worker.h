// One ExecuteGraphWithStreamAsync on one slot, off the JS thread. The request points into the
// caller's typed arrays, kept alive by references until the promise settles; the output bytes
// become ArrayBuffers without another copy.
#ifndef SERVE_FN_NPU_GE_EXECUTE_WORKER_H
#define SERVE_FN_NPU_GE_EXECUTE_WORKER_H

#include <napi.h>

#include <vector>

#include "ge-loaded-graph.h"

class GeModel;

class GeExecuteWorker : public Napi::AsyncWorker {
 public:
  GeExecuteWorker(Napi::Env env, GeModel *model, Napi::Object modelObject, GeExecuteRequest request,
                  const std::vector<Napi::Object> &inputObjects);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  GeModel *model_;
  Napi::ObjectReference modelObject_;
  std::vector<Napi::ObjectReference> inputObjects_;
  GeExecuteRequest request_;
  std::vector<GeResult> results_;
  NpuStatus status_;
  Napi::Promise::Deferred deferred_;
};

#endif
