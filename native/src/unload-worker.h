// Unloads a model off the JS thread, after every execution queued before it (OmModel's queue):
// frees its buffers, unloads it and releases its context, device and aclInit share.
#ifndef SERVE_FN_NPU_UNLOAD_WORKER_H
#define SERVE_FN_NPU_UNLOAD_WORKER_H

#include "promise-worker.h"

class OmModel;

class UnloadWorker : public PromiseWorker {
 public:
  UnloadWorker(Napi::Env env, OmModel *model, Napi::Object modelObject);

 protected:
  NpuStatus Run() override;
  void Settled() override;

 private:
  OmModel *model_;
};

#endif
