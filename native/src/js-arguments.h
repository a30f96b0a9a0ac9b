// Argument readers shared by the exported functions. Each returns false with a TypeError pending
// (NAPI_DISABLE_CPP_EXCEPTIONS), and the caller returns at once.
#ifndef SERVE_FN_NPU_JS_ARGUMENTS_H
#define SERVE_FN_NPU_JS_ARGUMENTS_H

#include <napi.h>

#include <cstdint>
#include <string>

bool OptionalString(Napi::Env env, Napi::Value value, const char *what, std::string *out);
// A whole number in [0, max].
bool WholeNumber(Napi::Env env, Napi::Value value, const char *what, double max, uint64_t *out);

#endif
