/*
 * Option parsing shared by the simulated parser, runner and compiler. The syntax is GE's:
 * input_shape / ge.inputShape "name:d,d;name2:d" where d is a size, -1 (dynamic) or lo~hi (a range),
 * as the aclgrphParseONNX and aclgrphBuildModel option tables of the CANN documentation describe.
 */
#include <cerrno>
#include <cstdlib>
#include <limits>

#include "ge-sim-internal.h"

namespace sim_ge {
bool Lookup(const Options &options, const char *key, std::string *value) {
  auto found = options.find(ge::AscendString(key));
  if (found == options.end()) return false;
  *value = std::string(found->second.GetString(), found->second.GetLength());
  return true;
}

static std::vector<std::string> Split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

static bool ParseInteger(const std::string &text, int64_t *value) {
  if (text.empty()) return false;
  errno = 0;
  char *end = nullptr;
  long long parsed = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *value = parsed;
  return true;
}

bool ParseList(const std::string &text, std::vector<int64_t> *values, std::string *err) {
  values->clear();
  for (const std::string &part : Split(text, ',')) {
    int64_t value = 0;
    if (!ParseInteger(part, &value) || value <= 0) {
      *err = "'" + text + "' is not a list of positive integers separated by ','";
      return false;
    }
    values->push_back(value);
  }
  return true;
}

/* One dim of a shape spec into (dim, min, max); false when it is not a size, -1 or lo~hi. */
static bool ParseDim(const std::string &text, int64_t *dim, int64_t *min, int64_t *max) {
  size_t tilde = text.find('~');
  if (tilde != std::string::npos) {
    if (!ParseInteger(text.substr(0, tilde), min) || !ParseInteger(text.substr(tilde + 1), max)) return false;
    *dim = -1;
    return *min >= 1 && *max >= *min;
  }
  if (!ParseInteger(text, dim)) return false;
  if (*dim == -1) {
    *min = 1;
    *max = std::numeric_limits<int64_t>::max();
    return true;
  }
  *min = *max = *dim;
  return *dim > 0;
}

static bool ApplyOne(const std::string &entry, std::vector<ge::SimTensorSpec> *specs, std::string *err) {
  /* ONNX names may contain ':', so the dims start after the last one. */
  size_t colon = entry.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    *err = "'" + entry + "' is not name:dims";
    return false;
  }
  std::string name = entry.substr(0, colon);
  ge::SimTensorSpec *spec = nullptr;
  std::string known;
  for (ge::SimTensorSpec &candidate : *specs) {
    if (candidate.name == name) spec = &candidate;
    known += (known.empty() ? "" : ", ") + candidate.name;
  }
  if (!spec) {
    *err = "'" + name + "' is not a graph input (inputs: " + known + ")";
    return false;
  }
  std::string dims_text = entry.substr(colon + 1);
  std::vector<std::string> parts = dims_text.empty() ? std::vector<std::string>() : Split(dims_text, ',');
  if (parts.size() != spec->dims.size()) {
    *err = "'" + name + "' has " + std::to_string(spec->dims.size()) + " dims in the model, the shape gives " +
           std::to_string(parts.size());
    return false;
  }
  for (size_t i = 0; i < parts.size(); i++) {
    int64_t dim = 0, min = 0, max = 0;
    if (!ParseDim(parts[i], &dim, &min, &max)) {
      *err = "dim " + std::to_string(i) + " of '" + name + "' is '" + parts[i] + "', not a size, -1 or lo~hi";
      return false;
    }
    if (spec->dims[i] > 0 && dim != spec->dims[i]) {
      *err = "dim " + std::to_string(i) + " of '" + name + "' is fixed at " + std::to_string(spec->dims[i]) +
             " by the model, the shape gives " + parts[i];
      return false;
    }
    spec->dims[i] = dim;
    spec->min[i] = min;
    spec->max[i] = max;
  }
  return true;
}

bool ApplyShapeSpec(const std::string &text, std::vector<ge::SimTensorSpec> *specs, std::string *err) {
  for (const std::string &entry : Split(text, ';')) {
    if (entry.empty()) continue;
    if (!ApplyOne(entry, specs, err)) return false;
  }
  return true;
}

bool ResolvePrecision(const std::string *mode, const std::string *mode_v2, bool *fp16, std::string *err) {
  if (mode && mode_v2) {
    *err = "precision_mode and precision_mode_v2 are both set; GE takes one of them";
    return false;
  }
  /* GE's default for inference graphs is force_fp16 (precision_mode_v2 fp16). */
  *fp16 = true;
  if (mode) {
    if (*mode == "force_fp16") return true;
    *fp16 = false;
    if (*mode == "force_fp32" || *mode == "must_keep_origin_dtype" || *mode == "cube_fp16in_fp32out") return true;
    *err = "precision_mode '" + *mode + "' is not simulated (force_fp16, force_fp32, must_keep_origin_dtype, cube_fp16in_fp32out are)";
    return false;
  }
  if (mode_v2) {
    if (*mode_v2 == "fp16") return true;
    *fp16 = false;
    if (*mode_v2 == "origin" || *mode_v2 == "cube_fp16in_fp32out") return true;
    *err = "precision_mode_v2 '" + *mode_v2 + "' is not simulated (fp16, origin, cube_fp16in_fp32out are)";
    return false;
  }
  return true;
}

ge::SimTensorSpec SpecFromInfo(const sim_onnx_tensor_info &info) {
  ge::SimTensorSpec spec;
  spec.name = info.name;
  spec.dtype = info.dtype;
  for (uint32_t i = 0; i < info.dim_count && i < SIM_ONNX_MAX_DIMS; i++) {
    int64_t dim = info.dims[i] > 0 ? info.dims[i] : -1;
    spec.dims.push_back(dim);
    spec.min.push_back(dim > 0 ? dim : 1);
    spec.max.push_back(dim > 0 ? dim : std::numeric_limits<int64_t>::max());
  }
  return spec;
}
}  // namespace sim_ge
