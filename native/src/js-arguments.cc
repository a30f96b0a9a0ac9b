#include "js-arguments.h"

#include <cmath>

bool OptionalString(Napi::Env env, Napi::Value value, const char *what, std::string *out) {
  if (value.IsUndefined() || value.IsNull()) return true;
  if (!value.IsString()) {
    Napi::TypeError::New(env, std::string(what) + " must be a string").ThrowAsJavaScriptException();
    return false;
  }
  *out = value.As<Napi::String>().Utf8Value();
  return true;
}

bool WholeNumber(Napi::Env env, Napi::Value value, const char *what, double max, uint64_t *out) {
  double number = value.IsNumber() ? value.As<Napi::Number>().DoubleValue() : -1;
  if (!(number >= 0 && number <= max && std::floor(number) == number)) {
    Napi::TypeError::New(env, std::string(what) + " must be a whole number from 0 to " + std::to_string(static_cast<uint64_t>(max)))
        .ThrowAsJavaScriptException();
    return false;
  }
  *out = static_cast<uint64_t>(number);
  return true;
}
