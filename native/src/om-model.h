// OmModel: the JS object for one loaded model (created only by loadModel).
//   describe(): { inputs, outputs, batchGears }                       [sync]
//   execute(inputs: ArrayBufferView[], batch: number): Promise<ArrayBuffer[]>  [async]
//   unload(): Promise<void>                                           [async]
//   unloaded: boolean
// Operations on one model run strictly one after another, in call order, through a queue on the
// JS thread: a model's buffers and its single stream allow no overlap (CANN AscendCL API reference), and a
// queue keeps waiting requests off the libuv pool instead of parking pool threads on a mutex.
#ifndef SERVE_FN_NPU_OM_MODEL_H
#define SERVE_FN_NPU_OM_MODEL_H

#include <napi.h>

#include <deque>
#include <memory>

#include "addon-state.h"
#include "loaded-model.h"

class OmModel : public Napi::ObjectWrap<OmModel> {
 public:
  static Napi::Function DefineClass(Napi::Env env);
  static Napi::Object Wrap(Napi::Env env, AddonState *state, std::unique_ptr<LoadedModel> model);

  explicit OmModel(const Napi::CallbackInfo &info);
  // A model dropped without unload() is released here, on the JS thread, as a last resort.
  ~OmModel() override = default;

  LoadedModel &model() { return *model_; }
  // Starts the worker now, or once the operations queued before it have finished.
  void Enqueue(Napi::AsyncWorker *worker);
  // Called by each worker after it settled its promise.
  void OperationDone();

 private:
  Napi::Value Describe(const Napi::CallbackInfo &info);
  Napi::Value Execute(const Napi::CallbackInfo &info);
  Napi::Value Unload(const Napi::CallbackInfo &info);
  Napi::Value Unloaded(const Napi::CallbackInfo &info);
  void StartNext();

  std::unique_ptr<LoadedModel> model_;
  std::deque<Napi::AsyncWorker *> queue_;
  bool running_ = false;
  bool unloadRequested_ = false;
};

#endif
