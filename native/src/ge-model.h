// GeModel: the JS object for one ONNX model loaded through GE (created only by loadGeModel).
//   slots: number; unloaded: boolean
//   execute(slot, inputs: {data, dims, dataType}[], outputs: {dataType, dims?}[]):
//     Promise<{data: ArrayBuffer, dims: number[]}[]>                     [async]
//   unload(): Promise<void>                                              [async]
// Unlike OmModel's queue, executions on different slots run at once (each slot has its own
// session and stream); a slot takes one execution at a time and refuses a second, because the
// scheduler in TypeScript owns the choice of slot. unload() waits for the running executions.
#ifndef SERVE_FN_NPU_GE_MODEL_H
#define SERVE_FN_NPU_GE_MODEL_H

#include <napi.h>

#include <memory>
#include <vector>

#include "addon-state.h"
#include "ge-loaded-graph.h"

class GeModel : public Napi::ObjectWrap<GeModel> {
 public:
  static Napi::Function DefineClass(Napi::Env env);
  static Napi::Object Wrap(Napi::Env env, AddonState *state, std::unique_ptr<GeLoadedGraph> graph);

  explicit GeModel(const Napi::CallbackInfo &info);
  // A model dropped without unload() is released here, on the JS thread, as a last resort.
  ~GeModel() override = default;

  GeLoadedGraph &graph() { return *graph_; }
  // Called by each execute worker after it settled its promise.
  void SlotDone(uint32_t slot);

 private:
  Napi::Value Execute(const Napi::CallbackInfo &info);
  Napi::Value Unload(const Napi::CallbackInfo &info);
  Napi::Value Slots(const Napi::CallbackInfo &info);
  Napi::Value Unloaded(const Napi::CallbackInfo &info);
  bool ReadRequest(const Napi::CallbackInfo &info, GeExecuteRequest *request, std::vector<Napi::Object> *keep);

  std::unique_ptr<GeLoadedGraph> graph_;
  std::vector<bool> busy_;
  uint32_t running_ = 0;
  bool unloadRequested_ = false;
  Napi::AsyncWorker *pendingUnload_ = nullptr;  // queued once running_ drops to 0
  Napi::ObjectReference unloadPromise_;
};

#endif
