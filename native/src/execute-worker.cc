#include "execute-worker.h"

#include "om-model.h"

ExecuteWorker::ExecuteWorker(Napi::Env env, OmModel *model, Napi::Object modelObject, const std::vector<Napi::TypedArray> &inputs,
                             uint64_t batch)
    : PromiseWorker(env, "serve-fn:npu:execute", modelObject), model_(model) {
  request_.batch = batch;
  for (const Napi::TypedArray &input : inputs) {
    const uint8_t *data = static_cast<const uint8_t *>(input.ArrayBuffer().Data()) + input.ByteOffset();
    request_.inputs.emplace_back(data, input.ByteLength());
    KeepAlive(input.As<Napi::Object>());
  }
}

NpuStatus ExecuteWorker::Run() { return model_->model().Execute(request_, &outputs_); }

Napi::Value ExecuteWorker::Result(Napi::Env env) {
  Napi::Array outputs = Napi::Array::New(env, outputs_.size());
  for (uint32_t i = 0; i < outputs_.size(); i++) outputs.Set(i, TakeArrayBuffer(env, &outputs_[i]));
  return outputs;
}

void ExecuteWorker::Settled() { model_->OperationDone(); }
