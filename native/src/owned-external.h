// How a load worker hands its native object to a new ObjectWrap instance (OmModel, GeModel):
// NewOwning passes the JS constructor an External pointing at the caller's unique_ptr, and the
// constructor moves the object out with TakeOwned; if the constructor never runs, the caller's
// unique_ptr still frees it. A script calling the constructor itself gets `refusal` as a TypeError.
#ifndef SERVE_FN_NPU_OWNED_EXTERNAL_H
#define SERVE_FN_NPU_OWNED_EXTERNAL_H

#include <napi.h>

#include <memory>

template <typename T>
Napi::Object NewOwning(Napi::FunctionReference &constructor, Napi::Env env, std::unique_ptr<T> owned) {
  return constructor.New({Napi::External<std::unique_ptr<T>>::New(env, &owned)});
}

// Null, with the TypeError pending, when the constructor was not called by NewOwning.
template <typename T>
std::unique_ptr<T> TakeOwned(const Napi::CallbackInfo &info, const char *refusal) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    Napi::TypeError::New(info.Env(), refusal).ThrowAsJavaScriptException();
    return nullptr;
  }
  return std::move(*info[0].As<Napi::External<std::unique_ptr<T>>>().Data());
}

#endif
