// Unloads a model off the JS thread, after every execution queued before it (OmModel's queue):
// frees its buffers, unloads it and releases its context, device and aclInit share.
#ifndef SERVE_FN_NPU_UNLOAD_WORKER_H
#define SERVE_FN_NPU_UNLOAD_WORKER_H

#include <napi.h>

#include "npu-status.h"

class OmModel;

struct UnloadBaton {
  NpuStatus status;
};

class UnloadWorker : public Napi::AsyncWorker {
 public:
  UnloadWorker(Napi::Env env, OmModel *model, Napi::Object modelObject);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  OmModel *model_;
  Napi::ObjectReference modelObject_;
  UnloadBaton baton_;
  Napi::Promise::Deferred deferred_;
};

#endif
