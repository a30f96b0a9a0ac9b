#include "execute-worker.h"

#include "om-model.h"

ExecuteWorker::ExecuteWorker(Napi::Env env, OmModel *model, Napi::Object modelObject, const std::vector<Napi::TypedArray> &inputs,
                             uint64_t batch)
    : Napi::AsyncWorker(env, "serve-fn:npu:execute"),
      model_(model),
      modelObject_(Napi::Persistent(modelObject)),
      deferred_(Napi::Promise::Deferred::New(env)) {
  baton_.request.batch = batch;
  for (const Napi::TypedArray &input : inputs) {
    const uint8_t *data = static_cast<const uint8_t *>(input.ArrayBuffer().Data()) + input.ByteOffset();
    baton_.request.inputs.emplace_back(data, input.ByteLength());
    inputObjects_.push_back(Napi::Persistent(input.As<Napi::Object>()));
  }
}

void ExecuteWorker::Execute() {
  baton_.status = model_->model().Execute(baton_.request, &baton_.outputs);
  if (!baton_.status.ok) SetError(baton_.status.message);
}

void ExecuteWorker::OnOK() {
  Napi::Env env = Env();
  Napi::Array outputs = Napi::Array::New(env, baton_.outputs.size());
  for (uint32_t i = 0; i < baton_.outputs.size(); i++) {
    OutputBytes &output = baton_.outputs[i];
    uint8_t *data = output.data.release();
    outputs.Set(i, Napi::ArrayBuffer::New(env, data, output.size, [](Napi::Env, void *bytes) { delete[] static_cast<uint8_t *>(bytes); }));
  }
  deferred_.Resolve(outputs);
  model_->OperationDone();
}

void ExecuteWorker::OnError(const Napi::Error &) {
  deferred_.Reject(ToJsError(Env(), baton_.status).Value());
  model_->OperationDone();
}
