#include "ge-options.h"

bool ReadStringOptions(Napi::Env env, Napi::Value value, const char *what, StringOptions *out) {
  if (!value.IsObject() || value.IsArray()) {
    Napi::TypeError::New(env, std::string(what) + " must be an object of string values").ThrowAsJavaScriptException();
    return false;
  }
  Napi::Object object = value.As<Napi::Object>();
  Napi::Array keys = object.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); i++) {
    std::string key = keys.Get(i).ToString().Utf8Value();
    Napi::Value entry = object.Get(key);
    if (!entry.IsString()) {
      Napi::TypeError::New(env, std::string(what) + "." + key + " must be a string").ThrowAsJavaScriptException();
      return false;
    }
    (*out)[key] = entry.As<Napi::String>().Utf8Value();
  }
  return true;
}

ge::Options ToGeOptions(const StringOptions &options) {
  ge::Options converted;
  for (const auto &entry : options) converted[ge::AscendString(entry.first.c_str())] = ge::AscendString(entry.second.c_str());
  return converted;
}
