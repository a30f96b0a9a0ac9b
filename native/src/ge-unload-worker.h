// Unloads a GE model off the JS thread once no slot is executing (GeModel holds it back until
// then): RemoveGraph, sessions, streams, buffers, the GE share and the device runtime.
#ifndef SERVE_FN_NPU_GE_UNLOAD_WORKER_H
#define SERVE_FN_NPU_GE_UNLOAD_WORKER_H

#include <napi.h>

#include "npu-status.h"

class GeModel;

class GeUnloadWorker : public Napi::AsyncWorker {
 public:
  GeUnloadWorker(Napi::Env env, GeModel *model, Napi::Object modelObject);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  GeModel *model_;
  Napi::ObjectReference modelObject_;
  NpuStatus status_;
  Napi::Promise::Deferred deferred_;
};

#endif
