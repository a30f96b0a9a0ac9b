/*
 * libge_compiler.so: aclgrphBuildInitialize, aclgrphBuildModel, aclgrphSaveModel and
 * aclgrphBuildFinalize (hicann/ge 8.5.0 inc/external/ge/ge_ir_build.h). The "offline model" built here is
 * the simulated AscendCL's OM format 2 around the ONNX bytes (sim_om_encode_onnx), so the serve-fn OM
 * path loads what `serve-fn convert` writes.
 */
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "ge-sim-internal.h"

namespace {
std::mutex build_lock;
bool build_initialized = false;

/* The ge::ir_option keys the simulation honours, with the strings ge_api_types.h gives them (INPUT_SHAPE,
 * DYNAMIC_BATCH_SIZE = kDynamicBatchSize, PRECISION_MODE, PRECISION_MODE_V2); any other is refused, not ignored. */
const char *const kInputShape = "input_shape";
const char *const kDynamicBatchSize = "ge.dynamicBatchSize";
const char *const kPrecisionMode = "ge.exec.precision_mode";
const char *const kPrecisionModeV2 = "ge.exec.precision_mode_v2";
const char *const kSocVersion = "ge.socVersion"; /* ir_option::SOC_VERSION */
const char *const kBuildOptions[] = {kInputShape, kDynamicBatchSize, kPrecisionMode, kPrecisionModeV2};

ge::graphStatus CheckShapes(const std::vector<ge::SimTensorSpec> &inputs, const std::vector<int64_t> &gears) {
  for (const ge::SimTensorSpec &input : inputs) {
    for (size_t d = 0; d < input.dims.size(); d++) {
      bool batch = !gears.empty() && d == 0;
      if (batch && input.dims[d] != -1) {
        return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "aclgrphBuildModel",
                           "ge.dynamicBatchSize needs -1 in dim 0 of every input in input_shape; '%s' has %lld", input.name.c_str(),
                           static_cast<long long>(input.dims[d]));
      }
      if (!batch && input.dims[d] == -1) {
        return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "aclgrphBuildModel",
                           "dim %zu of '%s' is dynamic: an offline model needs input_shape sizes (or ge.dynamicBatchSize for dim 0)", d,
                           input.name.c_str());
      }
    }
  }
  return ge::GRAPH_SUCCESS;
}
}  // namespace

namespace ge {
graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString> &global_options) {
  if (Status injected = sim_ge_injected("aclgrphBuildInitialize")) return injected;
  std::lock_guard<std::mutex> guard(build_lock);
  if (build_initialized) return sim_ge_fail(FAILED, "aclgrphBuildInitialize", "already initialized (aclgrphBuildFinalize first)");
  /* Real GE accepts this and breaks later: aclgrphBuildFinalize finalises GELib whenever it is initialised
   * (hicann/ge 8.5.0 compiler/api/aclgrph/ge_ir_build.cc), under these sessions. The simulation refuses at once. */
  if (int64_t sessions = sim_ge_counter("sessions")) {
    return sim_ge_fail(FAILED, "aclgrphBuildInitialize", "%lld GE session(s) are alive: aclgrphBuildFinalize would finalise GE under them",
                       static_cast<long long>(sessions));
  }
  std::string soc;
  if (!sim_ge::Lookup(global_options, kSocVersion, &soc) || soc.empty()) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "aclgrphBuildInitialize", "the global option ge.socVersion (ir_option::SOC_VERSION) is required");
  }
  build_initialized = true;
  sim_ge_count(SIM_GE_BUILD_ENVIRONMENTS, 1);
  return GRAPH_SUCCESS;
}

/* Returns nothing: a finalize without initialize is recorded, printed and counted (lifecycle_errors). */
void aclgrphBuildFinalize() {
  std::lock_guard<std::mutex> guard(build_lock);
  if (!build_initialized) {
    sim_ge_fail(FAILED, "aclgrphBuildFinalize", "aclgrphBuildInitialize has not been called");
    fprintf(stderr, "[sim ge] aclgrphBuildFinalize: aclgrphBuildInitialize has not been called\n");
    sim_ge_count(SIM_GE_LIFECYCLE_ERRORS, 1);
  } else {
    sim_ge_count(SIM_GE_BUILD_ENVIRONMENTS, -1);
  }
  build_initialized = false;
}

graphStatus aclgrphBuildModel(const Graph &graph, const std::map<AscendString, AscendString> &build_options,
                              ModelBufferData &model) {
  const char *fn = "aclgrphBuildModel";
  sim_ge_count(SIM_GE_BUILD_CALLS, 1);
  if (Status injected = sim_ge_injected(fn)) return injected;
  {
    std::lock_guard<std::mutex> guard(build_lock);
    if (!build_initialized) return sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, fn, "aclgrphBuildInitialize has not been called");
  }
  sim_ge_delay("GE_SIM_BUILD_DELAY_MS");
  const GraphImplPtr &impl = GraphUtils::Impl(graph);
  if (!impl || impl->onnx.empty()) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "the graph holds no parsed model");
  for (const auto &option : build_options) {
    bool known = false;
    for (const char *key : kBuildOptions) known = known || option.first == key;
    if (!known) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "build option '%s' is not simulated", option.first.GetString());
  }
  std::string shape, batch, mode, mode_v2, err;
  std::vector<SimTensorSpec> inputs = impl->inputs;
  if (sim_ge::Lookup(build_options, kInputShape, &shape) && !sim_ge::ApplyShapeSpec(shape, &inputs, &err)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "input_shape: %s", err.c_str());
  }
  std::vector<int64_t> gears;
  if (sim_ge::Lookup(build_options, kDynamicBatchSize, &batch) && !sim_ge::ParseList(batch, &gears, &err)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "ge.dynamicBatchSize: %s", err.c_str());
  }
  if (graphStatus status = CheckShapes(inputs, gears)) return status;
  bool has_mode = sim_ge::Lookup(build_options, kPrecisionMode, &mode);
  bool has_mode_v2 = sim_ge::Lookup(build_options, kPrecisionModeV2, &mode_v2);
  bool fp16 = true;
  if (!sim_ge::ResolvePrecision(has_mode ? &mode : nullptr, has_mode_v2 ? &mode_v2 : nullptr, &fp16, &err)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "%s", err.c_str());
  }
  std::vector<uint64_t> om_gears(gears.begin(), gears.end());
  uint8_t *bytes = nullptr;
  size_t size = 0;
  char om_err[512] = "";
  if (sim_om_encode_onnx(impl->onnx.data(), impl->onnx.size(), om_gears.data(), static_cast<uint32_t>(om_gears.size()), fp16 ? 1 : 0,
                         &bytes, &size, om_err, sizeof om_err) != 0) {
    return sim_ge_fail(ACL_ERROR_GE_INTERNAL_ERROR, fn, "the simulated OM encoder refused the graph: %s", om_err);
  }
  model.data = std::shared_ptr<uint8_t>(bytes, free);
  model.length = size;
  return GRAPH_SUCCESS;
}

/* The CANN documentation of aclgrphSaveModel (hicann/ge docs/graph_engine_api/aclgrphSaveModel.md):
 * the saved file name always gets the .om suffix appended, e.g. "ir_build_sample" → ir_build_sample.om. */
graphStatus aclgrphSaveModel(const char_t *output_file, const ModelBufferData &model) {
  const char *fn = "aclgrphSaveModel";
  if (Status injected = sim_ge_injected(fn)) return injected;
  if (!output_file || !*output_file) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "output_file is NULL or empty");
  if (!model.data || model.length == 0) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "the model buffer is empty");
  std::string path = std::string(output_file) + ".om";
  FILE *file = fopen(path.c_str(), "wb");
  bool written = file && fwrite(model.data.get(), 1, model.length, file) == model.length;
  if (file && fclose(file) != 0) written = false;
  if (!written) return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, fn, "cannot write %s", path.c_str());
  return GRAPH_SUCCESS;
}
}  // namespace ge
