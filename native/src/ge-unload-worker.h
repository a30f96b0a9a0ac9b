// Unloads a GE model off the JS thread once no slot is executing (GeModel holds it back until
// then): RemoveGraph, sessions, streams, buffers, the GE share and the device runtime.
#ifndef SERVE_FN_NPU_GE_UNLOAD_WORKER_H
#define SERVE_FN_NPU_GE_UNLOAD_WORKER_H

#include "promise-worker.h"

class GeModel;

class GeUnloadWorker : public PromiseWorker {
 public:
  GeUnloadWorker(Napi::Env env, GeModel *model, Napi::Object modelObject);

 protected:
  NpuStatus Run() override;

 private:
  GeModel *model_;
};

#endif
