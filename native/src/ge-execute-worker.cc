#include "ge-execute-worker.h"

#include "ge-model.h"

GeExecuteWorker::GeExecuteWorker(Napi::Env env, GeModel *model, Napi::Object modelObject, GeExecuteRequest request,
                                 const std::vector<Napi::Object> &inputObjects)
    : PromiseWorker(env, "serve-fn:npu:ge-execute", modelObject), model_(model), request_(std::move(request)) {
  for (const Napi::Object &object : inputObjects) KeepAlive(object);
}

NpuStatus GeExecuteWorker::Run() { return model_->graph().Execute(request_, &results_); }

Napi::Value GeExecuteWorker::Result(Napi::Env env) {
  Napi::Array outputs = Napi::Array::New(env, results_.size());
  for (uint32_t i = 0; i < results_.size(); i++) {
    GeResult &result = results_[i];
    Napi::Object output = Napi::Object::New(env);
    output.Set("data", TakeArrayBuffer(env, &result.bytes));
    Napi::Array dims = Napi::Array::New(env, result.dims.size());
    for (uint32_t d = 0; d < result.dims.size(); d++) dims.Set(d, Napi::Number::New(env, static_cast<double>(result.dims[d])));
    output.Set("dims", dims);
    outputs.Set(i, output);
  }
  return outputs;
}

void GeExecuteWorker::Settled() { model_->SlotDone(request_.slot); }
