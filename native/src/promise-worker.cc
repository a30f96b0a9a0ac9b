#include "promise-worker.h"

PromiseWorker::PromiseWorker(Napi::Env env, const char *resourceName)
    : Napi::AsyncWorker(env, resourceName), deferred_(Napi::Promise::Deferred::New(env)) {}

PromiseWorker::PromiseWorker(Napi::Env env, const char *resourceName, Napi::Object owner)
    : PromiseWorker(env, resourceName) {
  KeepAlive(owner);
}

Napi::Promise PromiseWorker::Start() {
  Napi::Promise promise = Promise();
  Queue();
  return promise;
}

Napi::Value PromiseWorker::Result(Napi::Env env) { return env.Undefined(); }

void PromiseWorker::Execute() {
  status_ = Run();
  if (!status_.ok) SetError(status_.message);
}

void PromiseWorker::OnOK() {
  Napi::Env env = Env();
  Napi::Value result = Result(env);
  if (env.IsExceptionPending()) {
    deferred_.Reject(env.GetAndClearPendingException().Value());
  } else {
    deferred_.Resolve(result);
  }
  Settled();
}

void PromiseWorker::OnError(const Napi::Error &) {
  deferred_.Reject(ToJsError(Env(), status_).Value());
  Settled();
}
