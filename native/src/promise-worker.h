// The shape every asynchronous call of the addon shares: a Napi::AsyncWorker that owns a promise,
// runs Run() on a libuv pool thread and settles the promise on the JS thread, resolved with
// Result() or rejected with the NpuStatus Run() returned (ToJsError: aclFunction/geFunction and
// friends). It keeps JS objects alive until then: the model whose native state Run() uses, and the
// typed arrays its request points into.
#ifndef SERVE_FN_NPU_PROMISE_WORKER_H
#define SERVE_FN_NPU_PROMISE_WORKER_H

#include <napi.h>

#include <vector>

#include "npu-status.h"

class PromiseWorker : public Napi::AsyncWorker {
 public:
  Napi::Promise Promise() const { return deferred_.Promise(); }
  // Queues the worker and returns its promise; for workers that need no model's queue.
  Napi::Promise Start();

 protected:
  PromiseWorker(Napi::Env env, const char *resourceName);
  // Held until the promise settles, so Run() may use `owner`'s native state.
  PromiseWorker(Napi::Env env, const char *resourceName, Napi::Object owner);

  void KeepAlive(Napi::Object object) { kept_.push_back(Napi::Persistent(object)); }

  // On a pool thread: the work itself.
  virtual NpuStatus Run() = 0;
  // On the JS thread once Run() succeeded: what the promise resolves to. A JS exception left
  // pending here rejects the promise instead.
  virtual Napi::Value Result(Napi::Env env);
  // On the JS thread after the promise settled, either way.
  virtual void Settled() {}

 private:
  void Execute() final;
  void OnOK() final;
  void OnError(const Napi::Error &error) final;

  Napi::Promise::Deferred deferred_;
  std::vector<Napi::ObjectReference> kept_;
  NpuStatus status_;
};

#endif
