#include "library-probe.h"

#include "acl-library.h"
#include "js-arguments.h"

Napi::Value ProbeLibrary(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::string path;
  if (!OptionalString(env, info[0], "libraryPath", &path)) return env.Undefined();
  AclLibrary::OpenResult result = AclLibrary::Open(path);
  Napi::Object probe = Napi::Object::New(env);
  probe.Set("found", Napi::Boolean::New(env, result.library != nullptr));
  if (result.library) {
    probe.Set("path", Napi::String::New(env, result.library->path()));
    probe.Set("variant", Napi::String::New(env, result.library->variant()));
  }
  Napi::Array tried = Napi::Array::New(env, result.tried.size());
  for (uint32_t i = 0; i < result.tried.size(); i++) tried.Set(i, Napi::String::New(env, result.tried[i]));
  probe.Set("tried", tried);
  return probe;
}
