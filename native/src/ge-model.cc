#include "ge-model.h"

#include <string>

#include "ge-execute-worker.h"
#include "ge-unload-worker.h"
#include "js-arguments.h"
#include "owned-external.h"

namespace {

// Larger than any real dimension. 25 such dims overflow int64_t when multiplied (2^31 to the
// 3rd already passes 2^63): ReadDims multiplies with an overflow check for that reason.
constexpr double kMaxDim = 1u << 31;

bool Fail(Napi::Env env, const std::string &message) {
  Napi::TypeError::New(env, message).ThrowAsJavaScriptException();
  return false;
}

bool ReadDims(Napi::Env env, Napi::Value value, const std::string &what, std::vector<int64_t> *dims, int64_t *elements) {
  if (!value.IsArray()) return Fail(env, what + ".dims must be an array of whole numbers");
  Napi::Array array = value.As<Napi::Array>();
  if (array.Length() > gert::Shape::kMaxDimNum) {
    return Fail(env, what + ".dims has " + std::to_string(array.Length()) + " dimensions; GE takes at most 25");
  }
  *elements = 1;
  for (uint32_t d = 0; d < array.Length(); d++) {
    uint64_t dim = 0;
    if (!WholeNumber(env, array.Get(d), (what + ".dims[" + std::to_string(d) + "]").c_str(), kMaxDim, &dim)) return false;
    if (__builtin_mul_overflow(*elements, static_cast<int64_t>(dim), elements)) return Fail(env, what + ".dims overflow");
    dims->push_back(static_cast<int64_t>(dim));
  }
  return true;
}

bool ReadDataType(Napi::Env env, Napi::Value value, const std::string &what, int64_t elements, ge::DataType *dataType,
                  size_t *bytes) {
  uint64_t code = 0;
  if (!WholeNumber(env, value, (what + ".dataType").c_str(), INT32_MAX, &code)) return false;
  *dataType = static_cast<ge::DataType>(code);
  int64_t size = ge::GetSizeInBytes(elements, *dataType);
  if (size < 0) return Fail(env, what + ".dataType " + std::to_string(code) + " is not a GE data type with a size");
  *bytes = static_cast<size_t>(size);
  return true;
}

bool ReadView(Napi::Env env, Napi::Value value, const std::string &what, const uint8_t **data, size_t *size) {
  if (value.IsTypedArray()) {
    Napi::TypedArray view = value.As<Napi::TypedArray>();
    *data = static_cast<const uint8_t *>(view.ArrayBuffer().Data()) + view.ByteOffset();
    *size = view.ByteLength();
    return true;
  }
  if (value.IsDataView()) {
    Napi::DataView view = value.As<Napi::DataView>();
    *data = static_cast<const uint8_t *>(view.ArrayBuffer().Data()) + view.ByteOffset();
    *size = view.ByteLength();
    return true;
  }
  return Fail(env, what + ".data must be an ArrayBufferView");
}

}  // namespace

Napi::Function GeModel::DefineClass(Napi::Env env) {
  return ObjectWrap<GeModel>::DefineClass(env, "GeModel",
                                          {InstanceMethod<&GeModel::Execute>("execute"),
                                           InstanceMethod<&GeModel::Unload>("unload"),
                                           InstanceAccessor<&GeModel::Slots>("slots"),
                                           InstanceAccessor<&GeModel::Unloaded>("unloaded")});
}

Napi::Object GeModel::Wrap(Napi::Env env, AddonState *state, std::unique_ptr<GeLoadedGraph> graph) {
  return NewOwning(state->geModelConstructor, env, std::move(graph));
}

GeModel::GeModel(const Napi::CallbackInfo &info)
    : ObjectWrap<GeModel>(info), graph_(TakeOwned<GeLoadedGraph>(info, "GeModel objects come from loadGeModel()")) {
  if (graph_) busy_.assign(graph_->slotCount(), false);
}

bool GeModel::ReadRequest(const Napi::CallbackInfo &info, GeExecuteRequest *request, std::vector<Napi::Object> *keep) {
  Napi::Env env = info.Env();
  uint64_t slot = 0;
  if (!WholeNumber(env, info[0], "slot", busy_.size() - 1.0, &slot)) return false;
  request->slot = static_cast<uint32_t>(slot);
  if (!info[1].IsArray() || !info[2].IsArray()) return Fail(env, "execute(slot, inputs, outputs) needs two arrays");
  Napi::Array inputs = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < inputs.Length(); i++) {
    std::string what = "inputs[" + std::to_string(i) + "]";
    if (!inputs.Get(i).IsObject()) return Fail(env, what + " must be { data, dims, dataType }");
    Napi::Object object = inputs.Get(i).As<Napi::Object>();
    GeInputTensor input;
    int64_t elements = 0;
    size_t expected = 0;
    if (!ReadView(env, object.Get("data"), what, &input.data, &input.size) ||
        !ReadDims(env, object.Get("dims"), what, &input.dims, &elements) ||
        !ReadDataType(env, object.Get("dataType"), what, elements, &input.dataType, &expected)) {
      return false;
    }
    if (expected != input.size) {
      Napi::RangeError::New(env, what + " has " + std::to_string(input.size) + " bytes; its dims and data type need " +
                                     std::to_string(expected))
          .ThrowAsJavaScriptException();
      return false;
    }
    keep->push_back(object.Get("data").As<Napi::Object>());
    request->inputs.push_back(std::move(input));
  }
  Napi::Array outputs = info[2].As<Napi::Array>();
  bool allDims = outputs.Length() > 0;
  std::vector<GeOutputTensor> described;
  for (uint32_t i = 0; i < outputs.Length(); i++) {
    std::string what = "outputs[" + std::to_string(i) + "]";
    if (!outputs.Get(i).IsObject()) return Fail(env, what + " must be { dataType, dims? }");
    Napi::Object object = outputs.Get(i).As<Napi::Object>();
    GeOutputTensor output;
    int64_t elements = 1;
    size_t bytes = 0;
    Napi::Value dims = object.Get("dims");
    bool hasDims = !dims.IsUndefined() && !dims.IsNull();
    if ((hasDims && !ReadDims(env, dims, what, &output.dims, &elements)) ||
        !ReadDataType(env, object.Get("dataType"), what, elements, &output.dataType, &bytes)) {
      return false;
    }
    allDims = allDims && hasDims;
    described.push_back(std::move(output));
  }
  // One output without dims and GE allocates them all: ExecuteGraphWithStreamAsync takes either
  // a full set of output tensors or none.
  if (allDims) request->callerOutputs = std::move(described);
  return true;
}

Napi::Value GeModel::Execute(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (unloadRequested_ || !graph_->loaded()) {
    Napi::Error::New(env, "the model has been unloaded").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  GeExecuteRequest request;
  std::vector<Napi::Object> keep;
  if (!ReadRequest(info, &request, &keep)) return env.Undefined();
  if (busy_[request.slot]) {
    Napi::Error::New(env, "execution slot " + std::to_string(request.slot) + " is busy: a slot runs one execute at a time")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  busy_[request.slot] = true;
  running_++;
  return (new GeExecuteWorker(env, this, info.This().As<Napi::Object>(), std::move(request), keep))->Start();
}

void GeModel::SlotDone(uint32_t slot) {
  busy_[slot] = false;
  if (--running_ == 0 && pendingUnload_) {
    pendingUnload_->Queue();
    pendingUnload_ = nullptr;
  }
}

Napi::Value GeModel::Unload(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  // Unloading twice gives the first call's promise: one unload worker per model.
  if (unloadRequested_) return unloadPromise_.Value();
  unloadRequested_ = true;
  auto *worker = new GeUnloadWorker(env, this, info.This().As<Napi::Object>());
  Napi::Promise promise = worker->Promise();
  unloadPromise_ = Napi::Persistent(promise.As<Napi::Object>());
  if (running_ > 0) {
    pendingUnload_ = worker;
  } else {
    worker->Queue();
  }
  return promise;
}

Napi::Value GeModel::Slots(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<double>(busy_.size()));
}

Napi::Value GeModel::Unloaded(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), unloadRequested_ || !graph_->loaded());
}
