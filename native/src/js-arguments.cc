#include "js-arguments.h"

#include <cmath>

bool OptionsObject(Napi::Env env, Napi::Value value, const char *function, Napi::Object *out) {
  if (!value.IsObject()) {
    Napi::TypeError::New(env, std::string(function) + "(options) needs an options object").ThrowAsJavaScriptException();
    return false;
  }
  *out = value.As<Napi::Object>();
  return true;
}

bool OptionalString(Napi::Env env, Napi::Value value, const char *what, std::string *out) {
  if (value.IsUndefined() || value.IsNull()) return true;
  if (!value.IsString()) {
    Napi::TypeError::New(env, std::string(what) + " must be a string").ThrowAsJavaScriptException();
    return false;
  }
  *out = value.As<Napi::String>().Utf8Value();
  return true;
}

bool ReadWholeNumber(napi_env env, napi_value value, double max, uint64_t *out) {
  double number = -1;
  // napi_number_expected for anything but a number; number stays -1 then.
  if (napi_get_value_double(env, value, &number) != napi_ok) number = -1;
  if (!(number >= 0 && number <= max && std::floor(number) == number)) return false;
  *out = static_cast<uint64_t>(number);
  return true;
}

void ThrowNotWholeNumber(Napi::Env env, const std::string &what, double max) {
  Napi::TypeError::New(env, what + " must be a whole number from 0 to " + std::to_string(static_cast<uint64_t>(max)))
      .ThrowAsJavaScriptException();
}

bool WholeNumber(Napi::Env env, Napi::Value value, const char *what, double max, uint64_t *out) {
  if (ReadWholeNumber(env, value, max, out)) return true;
  ThrowNotWholeNumber(env, what, max);
  return false;
}

bool ModelFileOrBytes(Napi::Env env, Napi::Object options, std::string *file, std::vector<uint8_t> *bytes) {
  if (!OptionalString(env, options.Get("file"), "file", file)) return false;
  Napi::Value view = options.Get("bytes");
  if (file->empty() == !view.IsTypedArray()) {
    Napi::TypeError::New(env, "give exactly one of file (a path) or bytes (a Uint8Array)").ThrowAsJavaScriptException();
    return false;
  }
  if (view.IsTypedArray()) {
    Napi::TypedArray array = view.As<Napi::TypedArray>();
    const uint8_t *data = static_cast<const uint8_t *>(array.ArrayBuffer().Data()) + array.ByteOffset();
    bytes->assign(data, data + array.ByteLength());
  }
  return true;
}
