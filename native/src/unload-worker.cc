#include "unload-worker.h"

#include "om-model.h"

UnloadWorker::UnloadWorker(Napi::Env env, OmModel *model, Napi::Object modelObject)
    : Napi::AsyncWorker(env, "serve-fn:npu:unload"),
      model_(model),
      modelObject_(Napi::Persistent(modelObject)),
      deferred_(Napi::Promise::Deferred::New(env)) {}

void UnloadWorker::Execute() {
  baton_.status = model_->model().Unload();
  if (!baton_.status.ok) SetError(baton_.status.message);
}

void UnloadWorker::OnOK() {
  deferred_.Resolve(Env().Undefined());
  model_->OperationDone();
}

void UnloadWorker::OnError(const Napi::Error &) {
  deferred_.Reject(ToJsError(Env(), baton_.status).Value());
  model_->OperationDone();
}
