#include "ge-load-worker.h"

#include "acl-library.h"
#include "ge-model.h"
#include "js-arguments.h"

namespace {

// Far above what a device holds; a bound so a typo cannot ask for millions of sessions.
constexpr double kMaxSlots = 256;

}  // namespace

GeLoadWorker::GeLoadWorker(Napi::Env env, AddonState *state, std::string libraryPath, int32_t deviceId,
                           GeLoadRequest request)
    : Napi::AsyncWorker(env, "serve-fn:npu:ge-load"),
      state_(state),
      libraryPath_(std::move(libraryPath)),
      deviceId_(deviceId),
      request_(std::move(request)),
      deferred_(Napi::Promise::Deferred::New(env)) {}

void GeLoadWorker::Execute() {
  AclLibrary::OpenResult opened = AclLibrary::Open(libraryPath_);
  if (!opened.library) {
    status_ = opened.NotFound();
  } else {
    std::unique_ptr<DeviceRuntime> runtime;
    status_ = DeviceRuntime::Create(opened.library, deviceId_, &runtime);
    if (status_.ok) status_ = GeLoadedGraph::Load(std::move(runtime), deviceId_, request_, &graph_);
  }
  // The ONNX bytes are only needed to parse; the compiled graphs live in GE now.
  request_.source = ModelSource();
  if (!status_.ok) SetError(status_.message);
}

void GeLoadWorker::OnOK() {
  Napi::Env env = Env();
  Napi::Object model = GeModel::Wrap(env, state_, std::move(graph_));
  if (env.IsExceptionPending()) {
    deferred_.Reject(env.GetAndClearPendingException().Value());
    return;
  }
  deferred_.Resolve(model);
}

void GeLoadWorker::OnError(const Napi::Error &) { deferred_.Reject(ToJsError(Env(), status_).Value()); }

Napi::Value LoadGeModel(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) {
    Napi::TypeError::New(env, "loadGeModel(options) needs an options object").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object options = info[0].As<Napi::Object>();
  std::string libraryPath;
  uint64_t deviceId = 0;
  uint64_t slots = 0;
  GeLoadRequest request;
  if (!OptionalString(env, options.Get("libraryPath"), "libraryPath", &libraryPath) ||
      !WholeNumber(env, options.Get("deviceId"), "deviceId", INT32_MAX, &deviceId) ||
      !ModelFileOrBytes(env, options, &request.source.file, &request.source.bytes) ||
      !WholeNumber(env, options.Get("slots"), "slots", kMaxSlots, &slots) ||
      !ReadStringOptions(env, options.Get("globalOptions"), "globalOptions", &request.globalOptions) ||
      !ReadStringOptions(env, options.Get("sessionOptions"), "sessionOptions", &request.sessionOptions) ||
      !ReadStringOptions(env, options.Get("graphOptions"), "graphOptions", &request.graphOptions) ||
      !ReadStringOptions(env, options.Get("parserOptions"), "parserOptions", &request.parserOptions)) {
    return env.Undefined();
  }
  if (slots == 0) {
    Napi::RangeError::New(env, "slots must be at least 1").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  request.slots = static_cast<uint32_t>(slots);
  auto *worker = new GeLoadWorker(env, static_cast<AddonState *>(info.Data()), libraryPath, static_cast<int32_t>(deviceId),
                                  std::move(request));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}
