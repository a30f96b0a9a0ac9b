#include "om-model.h"

#include "execute-worker.h"
#include "js-arguments.h"
#include "owned-external.h"
#include "unload-worker.h"

namespace {

Napi::Object TensorObject(Napi::Env env, const TensorInfo &tensor) {
  Napi::Object object = Napi::Object::New(env);
  Napi::Array dims = Napi::Array::New(env, tensor.dims.size());
  for (uint32_t i = 0; i < tensor.dims.size(); i++) dims.Set(i, Napi::Number::New(env, static_cast<double>(tensor.dims[i])));
  object.Set("name", Napi::String::New(env, tensor.name));
  object.Set("dims", dims);
  object.Set("dataType", Napi::Number::New(env, tensor.dataType));
  object.Set("byteSize", Napi::Number::New(env, static_cast<double>(tensor.byteSize)));
  return object;
}

Napi::Array TensorArray(Napi::Env env, const std::vector<TensorInfo> &tensors) {
  Napi::Array array = Napi::Array::New(env, tensors.size());
  for (uint32_t i = 0; i < tensors.size(); i++) array.Set(i, TensorObject(env, tensors[i]));
  return array;
}

}  // namespace

Napi::Function OmModel::DefineClass(Napi::Env env) {
  return ObjectWrap<OmModel>::DefineClass(env, "OmModel",
                                          {InstanceMethod<&OmModel::Describe>("describe"),
                                           InstanceMethod<&OmModel::Execute>("execute"),
                                           InstanceMethod<&OmModel::Unload>("unload"),
                                           InstanceAccessor<&OmModel::Unloaded>("unloaded")});
}

Napi::Object OmModel::Wrap(Napi::Env env, AddonState *state, std::unique_ptr<LoadedModel> model) {
  return NewOwning(state->omModelConstructor, env, std::move(model));
}

OmModel::OmModel(const Napi::CallbackInfo &info)
    : ObjectWrap<OmModel>(info), model_(TakeOwned<LoadedModel>(info, "OmModel objects come from loadModel()")) {}

void OmModel::Enqueue(Napi::AsyncWorker *worker) {
  queue_.push_back(worker);
  if (!running_) StartNext();
}

void OmModel::OperationDone() {
  running_ = false;
  StartNext();
}

void OmModel::StartNext() {
  if (queue_.empty()) return;
  running_ = true;
  Napi::AsyncWorker *next = queue_.front();
  queue_.pop_front();
  next->Queue();
}

Napi::Value OmModel::Describe(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const ModelDescription &description = model_->description();
  Napi::Object object = Napi::Object::New(env);
  object.Set("inputs", TensorArray(env, description.inputs));
  object.Set("outputs", TensorArray(env, description.outputs));
  Napi::Array gears = Napi::Array::New(env, description.batchGears.size());
  for (uint32_t i = 0; i < description.batchGears.size(); i++) {
    gears.Set(i, Napi::Number::New(env, static_cast<double>(description.batchGears[i])));
  }
  object.Set("batchGears", gears);
  return object;
}

Napi::Value OmModel::Execute(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (unloadRequested_ || !model_->loaded()) {
    Napi::Error::New(env, "the model has been unloaded").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (!info[0].IsArray()) {
    Napi::TypeError::New(env, "inputs must be an array of ArrayBufferViews").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  uint64_t batch = 0;
  if (!WholeNumber(env, info[1], "batch", 1u << 30, &batch)) return env.Undefined();
  Napi::Array inputs = info[0].As<Napi::Array>();
  std::vector<Napi::TypedArray> views;
  std::vector<size_t> sizes;
  for (uint32_t i = 0; i < inputs.Length(); i++) {
    Napi::Value value = inputs.Get(i);
    if (!value.IsTypedArray()) {
      Napi::TypeError::New(env, "input " + std::to_string(i) + " must be a TypedArray").ThrowAsJavaScriptException();
      return env.Undefined();
    }
    views.push_back(value.As<Napi::TypedArray>());
    sizes.push_back(views.back().ByteLength());
  }
  std::string problem = model_->description().Validate(sizes, batch);
  if (!problem.empty()) {
    Napi::RangeError::New(env, problem).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto *worker = new ExecuteWorker(env, this, info.This().As<Napi::Object>(), views, batch);
  Napi::Promise promise = worker->Promise();
  Enqueue(worker);
  return promise;
}

Napi::Value OmModel::Unload(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  unloadRequested_ = true;
  auto *worker = new UnloadWorker(env, this, info.This().As<Napi::Object>());
  Napi::Promise promise = worker->Promise();
  Enqueue(worker);
  return promise;
}

Napi::Value OmModel::Unloaded(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), unloadRequested_ || !model_->loaded());
}
