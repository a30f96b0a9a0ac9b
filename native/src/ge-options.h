// Option maps for GE: read from a JS Record<string, string> and handed to GE as the AscendString
// maps its calls take (ge_api.h, ge_ir_build.h and onnx_parser.h use only these overloads here).
#ifndef SERVE_FN_NPU_GE_OPTIONS_H
#define SERVE_FN_NPU_GE_OPTIONS_H

#include <napi.h>

#include <map>
#include <string>

#include "ge-api.h"

using StringOptions = std::map<std::string, std::string>;

// An object whose own enumerable values are all strings; false with a TypeError pending otherwise.
bool ReadStringOptions(Napi::Env env, Napi::Value value, const char *what, StringOptions *out);

ge::Options ToGeOptions(const StringOptions &options);

#endif
