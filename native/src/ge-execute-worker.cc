#include "ge-execute-worker.h"

#include "ge-model.h"

GeExecuteWorker::GeExecuteWorker(Napi::Env env, GeModel *model, Napi::Object modelObject, GeExecuteRequest request,
                                 const std::vector<Napi::Object> &inputObjects)
    : Napi::AsyncWorker(env, "serve-fn:npu:ge-execute"),
      model_(model),
      modelObject_(Napi::Persistent(modelObject)),
      request_(std::move(request)),
      deferred_(Napi::Promise::Deferred::New(env)) {
  for (const Napi::Object &object : inputObjects) inputObjects_.push_back(Napi::Persistent(object));
}

void GeExecuteWorker::Execute() {
  status_ = model_->graph().Execute(request_, &results_);
  if (!status_.ok) SetError(status_.message);
}

void GeExecuteWorker::OnOK() {
  Napi::Env env = Env();
  Napi::Array outputs = Napi::Array::New(env, results_.size());
  for (uint32_t i = 0; i < results_.size(); i++) {
    GeResult &result = results_[i];
    Napi::Object output = Napi::Object::New(env);
    uint8_t *data = result.bytes.data.release();
    output.Set("data", Napi::ArrayBuffer::New(env, data, result.bytes.size,
                                              [](Napi::Env, void *bytes) { delete[] static_cast<uint8_t *>(bytes); }));
    Napi::Array dims = Napi::Array::New(env, result.dims.size());
    for (uint32_t d = 0; d < result.dims.size(); d++) dims.Set(d, Napi::Number::New(env, static_cast<double>(result.dims[d])));
    output.Set("dims", dims);
    outputs.Set(i, output);
  }
  deferred_.Resolve(outputs);
  model_->SlotDone(request_.slot);
}

void GeExecuteWorker::OnError(const Napi::Error &) {
  deferred_.Reject(ToJsError(Env(), status_).Value());
  model_->SlotDone(request_.slot);
}
