// Argument readers shared by the exported functions. Each returns false with a TypeError pending
// (NAPI_DISABLE_CPP_EXCEPTIONS), and the caller returns at once.
#ifndef SERVE_FN_NPU_JS_ARGUMENTS_H
#define SERVE_FN_NPU_JS_ARGUMENTS_H

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

// The options object of `function(options)`.
bool OptionsObject(Napi::Env env, Napi::Value value, const char *function, Napi::Object *out);
bool OptionalString(Napi::Env env, Napi::Value value, const char *what, std::string *out);
// A whole number in [0, max].
bool WholeNumber(Napi::Env env, Napi::Value value, const char *what, double max, uint64_t *out);
// The same check with one N-API call and no error raised, for per-call paths that name the value
// (and so build its label) only when it is wrong: ThrowNotWholeNumber then raises WholeNumber's error.
bool ReadWholeNumber(napi_env env, napi_value value, double max, uint64_t *out);
void ThrowNotWholeNumber(Napi::Env env, const std::string &what, double max);
// options.file (a path) or options.bytes (a Uint8Array, copied): exactly one of them.
bool ModelFileOrBytes(Napi::Env env, Napi::Object options, std::string *file, std::vector<uint8_t> *bytes);

#endif
