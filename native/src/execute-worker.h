// One model execution off the JS thread: the baton carries the request (pointers into the caller's
// typed arrays, kept alive by references until the promise settles) and the output bytes, which
// become ArrayBuffers without another copy.
#ifndef SERVE_FN_NPU_EXECUTE_WORKER_H
#define SERVE_FN_NPU_EXECUTE_WORKER_H

#include <napi.h>

#include <vector>

#include "loaded-model.h"

class OmModel;

struct ExecuteBaton {
  ExecuteRequest request;
  std::vector<OutputBytes> outputs;
  NpuStatus status;
};

class ExecuteWorker : public Napi::AsyncWorker {
 public:
  ExecuteWorker(Napi::Env env, OmModel *model, Napi::Object modelObject, const std::vector<Napi::TypedArray> &inputs, uint64_t batch);

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error &error) override;

 private:
  OmModel *model_;
  Napi::ObjectReference modelObject_;
  std::vector<Napi::ObjectReference> inputObjects_;
  ExecuteBaton baton_;
  Napi::Promise::Deferred deferred_;
};

#endif
