#include "load-worker.h"

#include "acl-library.h"
#include "js-arguments.h"
#include "om-model.h"

LoadWorker::LoadWorker(Napi::Env env, AddonState *state, LoadBaton baton)
    : Napi::AsyncWorker(env, "serve-fn:npu:load"),
      state_(state),
      baton_(std::move(baton)),
      deferred_(Napi::Promise::Deferred::New(env)) {}

void LoadWorker::Execute() {
  AclLibrary::OpenResult opened = AclLibrary::Open(baton_.libraryPath);
  if (!opened.library) {
    baton_.status = opened.NotFound();
  } else {
    std::unique_ptr<DeviceRuntime> runtime;
    baton_.status = DeviceRuntime::Create(opened.library, baton_.deviceId, &runtime);
    if (baton_.status.ok) baton_.status = LoadedModel::Load(std::move(runtime), baton_.source, &baton_.model);
  }
  if (!baton_.status.ok) SetError(baton_.status.message);
}

void LoadWorker::OnOK() {
  Napi::Env env = Env();
  Napi::Object model = OmModel::Wrap(env, state_, std::move(baton_.model));
  if (env.IsExceptionPending()) {
    deferred_.Reject(env.GetAndClearPendingException().Value());
    return;
  }
  deferred_.Resolve(model);
}

void LoadWorker::OnError(const Napi::Error &) { deferred_.Reject(ToJsError(Env(), baton_.status).Value()); }

Napi::Value LoadModel(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) {
    Napi::TypeError::New(env, "loadModel(options) needs an options object").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  Napi::Object options = info[0].As<Napi::Object>();
  LoadBaton baton;
  uint64_t deviceId = 0;
  if (!OptionalString(env, options.Get("libraryPath"), "libraryPath", &baton.libraryPath) ||
      !WholeNumber(env, options.Get("deviceId"), "deviceId", INT32_MAX, &deviceId) ||
      !ModelFileOrBytes(env, options, &baton.source.file, &baton.source.bytes)) {
    return env.Undefined();
  }
  baton.deviceId = static_cast<int32_t>(deviceId);
  auto *worker = new LoadWorker(env, static_cast<AddonState *>(info.Data()), std::move(baton));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}
