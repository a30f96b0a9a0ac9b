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

// "inputs[2]": built only for an error message, never on the per-call path.
std::string Label(const char *list, uint32_t index) { return std::string(list) + "[" + std::to_string(index) + "]"; }

bool ReadDims(Napi::Env env, Napi::Value value, const char *list, uint32_t index, GeDims *dims, int64_t *elements) {
  if (!value.IsArray()) return Fail(env, Label(list, index) + ".dims must be an array of whole numbers");
  Napi::Array array = value.As<Napi::Array>();
  uint32_t count = array.Length();
  if (count > gert::Shape::kMaxDimNum) {
    return Fail(env, Label(list, index) + ".dims has " + std::to_string(count) + " dimensions; GE takes at most 25");
  }
  *elements = 1;
  for (uint32_t d = 0; d < count; d++) {
    uint64_t dim = 0;
    if (!ReadWholeNumber(env, array.Get(d), kMaxDim, &dim)) {
      ThrowNotWholeNumber(env, Label(list, index) + ".dims[" + std::to_string(d) + "]", kMaxDim);
      return false;
    }
    if (__builtin_mul_overflow(*elements, static_cast<int64_t>(dim), elements)) return Fail(env, Label(list, index) + ".dims overflow");
    dims->values[d] = static_cast<int64_t>(dim);
  }
  dims->count = count;
  return true;
}

bool ReadDataType(Napi::Env env, Napi::Value value, const char *list, uint32_t index, int64_t elements, ge::DataType *dataType,
                  size_t *bytes) {
  uint64_t code = 0;
  if (!ReadWholeNumber(env, value, INT32_MAX, &code)) {
    ThrowNotWholeNumber(env, Label(list, index) + ".dataType", INT32_MAX);
    return false;
  }
  *dataType = static_cast<ge::DataType>(code);
  int64_t size = ge::GetSizeInBytes(elements, *dataType);
  if (size < 0) {
    return Fail(env, Label(list, index) + ".dataType " + std::to_string(code) + " is not a GE data type with a size");
  }
  *bytes = static_cast<size_t>(size);
  return true;
}

size_t ElementBytes(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      return 1;
    case napi_int16_array:
    case napi_uint16_array:
      return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
      return 4;
    default:  // float64, bigint64, biguint64
      return 8;
  }
}

// One N-API call for a typed array (its data pointer already includes the byte offset), where
// Napi::TypedArray's accessors each ask again; a DataView is the other ArrayBufferView.
bool ReadView(Napi::Env env, Napi::Value value, uint32_t index, const uint8_t **data, size_t *size) {
  napi_typedarray_type type;
  size_t length = 0;
  void *bytes = nullptr;
  if (napi_get_typedarray_info(env, value, &type, &length, &bytes, nullptr, nullptr) == napi_ok) {
    *data = static_cast<const uint8_t *>(bytes);
    *size = length * ElementBytes(type);
    return true;
  }
  if (napi_get_dataview_info(env, value, size, &bytes, nullptr, nullptr) == napi_ok) {
    *data = static_cast<const uint8_t *>(bytes);
    return true;
  }
  return Fail(env, Label("inputs", index) + ".data must be an ArrayBufferView");
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
  uint32_t inputCount = inputs.Length();
  request->inputs.resize(inputCount);
  keep->reserve(inputCount);
  for (uint32_t i = 0; i < inputCount; i++) {
    Napi::Value item = inputs.Get(i);
    if (!item.IsObject()) return Fail(env, Label("inputs", i) + " must be { data, dims, dataType }");
    Napi::Object object = item.As<Napi::Object>();
    GeInputTensor &input = request->inputs[i];
    Napi::Value data = object.Get("data");
    int64_t elements = 0;
    size_t expected = 0;
    if (!ReadView(env, data, i, &input.data, &input.size) ||
        !ReadDims(env, object.Get("dims"), "inputs", i, &input.dims, &elements) ||
        !ReadDataType(env, object.Get("dataType"), "inputs", i, elements, &input.dataType, &expected)) {
      return false;
    }
    if (expected != input.size) {
      Napi::RangeError::New(env, Label("inputs", i) + " has " + std::to_string(input.size) +
                                     " bytes; its dims and data type need " + std::to_string(expected))
          .ThrowAsJavaScriptException();
      return false;
    }
    keep->push_back(data.As<Napi::Object>());
  }
  Napi::Array outputs = info[2].As<Napi::Array>();
  uint32_t outputCount = outputs.Length();
  bool allDims = outputCount > 0;
  std::vector<GeOutputTensor> &described = request->callerOutputs;
  described.resize(outputCount);
  for (uint32_t i = 0; i < outputCount; i++) {
    Napi::Value item = outputs.Get(i);
    if (!item.IsObject()) return Fail(env, Label("outputs", i) + " must be { dataType, dims? }");
    Napi::Object object = item.As<Napi::Object>();
    GeOutputTensor &output = described[i];
    int64_t elements = 1;
    Napi::Value dims = object.Get("dims");
    bool hasDims = !dims.IsUndefined() && !dims.IsNull();
    if ((hasDims && !ReadDims(env, dims, "outputs", i, &output.dims, &elements)) ||
        !ReadDataType(env, object.Get("dataType"), "outputs", i, elements, &output.dataType, &output.bytes)) {
      return false;
    }
    allDims = allDims && hasDims;
  }
  // One output without dims and GE allocates them all: ExecuteGraphWithStreamAsync takes either
  // a full set of output tensors or none.
  if (!allDims) described.clear();
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
