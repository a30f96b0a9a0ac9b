#include "ge-unload-worker.h"

#include "ge-model.h"

GeUnloadWorker::GeUnloadWorker(Napi::Env env, GeModel *model, Napi::Object modelObject)
    : Napi::AsyncWorker(env, "serve-fn:npu:ge-unload"),
      model_(model),
      modelObject_(Napi::Persistent(modelObject)),
      deferred_(Napi::Promise::Deferred::New(env)) {}

void GeUnloadWorker::Execute() {
  status_ = model_->graph().Unload();
  if (!status_.ok) SetError(status_.message);
}

void GeUnloadWorker::OnOK() { deferred_.Resolve(Env().Undefined()); }

void GeUnloadWorker::OnError(const Napi::Error &) { deferred_.Reject(ToJsError(Env(), status_).Value()); }
