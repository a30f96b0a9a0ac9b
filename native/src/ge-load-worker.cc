#include "ge-load-worker.h"

#include "ge-environment.h"
#include "ge-model.h"
#include "js-arguments.h"

namespace {

// Far above what a device holds; a bound so a typo cannot ask for millions of sessions.
constexpr double kMaxSlots = 256;

}  // namespace

GeLoadWorker::GeLoadWorker(Napi::Env env, AddonState *state, std::string libraryPath, int32_t deviceId,
                           GeLoadRequest request)
    : PromiseWorker(env, "serve-fn:npu:ge-load"),
      state_(state),
      libraryPath_(std::move(libraryPath)),
      deviceId_(deviceId),
      request_(std::move(request)) {}

NpuStatus GeLoadWorker::Run() {
  // Unnamed, AscendCL is the one the GE libraries were built against, not the usual search's.
  AclLibrary::OpenResult opened = AclLibrary::Open(libraryPath_.empty() ? GeEnvironment::AclDirectory() : libraryPath_);
  if (!opened.library) return opened.NotFound();
  NpuStatus status = GeEnvironment::CheckSameAscendCl(*opened.library);
  std::unique_ptr<DeviceRuntime> runtime;
  if (status.ok) status = DeviceRuntime::Create(opened.library, deviceId_, &runtime, DeviceRuntime::Stream::kNone);
  if (status.ok) status = GeLoadedGraph::Load(std::move(runtime), request_, &graph_);
  // The ONNX bytes are only needed to parse; the compiled graphs live in GE now.
  request_.source = ModelSource();
  return status;
}

Napi::Value GeLoadWorker::Result(Napi::Env env) { return GeModel::Wrap(env, state_, std::move(graph_)); }

Napi::Value LoadGeModel(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object options;
  std::string libraryPath;
  uint64_t deviceId = 0;
  uint64_t slots = 0;
  GeLoadRequest request;
  if (!OptionsObject(env, info[0], "loadGeModel", &options) ||
      !OptionalString(env, options.Get("libraryPath"), "libraryPath", &libraryPath) ||
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
  return (new GeLoadWorker(env, static_cast<AddonState *>(info.Data()), libraryPath, static_cast<int32_t>(deviceId),
                           std::move(request)))
      ->Start();
}
