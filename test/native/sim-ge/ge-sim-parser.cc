/*
 * libfmk_onnx_parser.so: aclgrphParseONNX and aclgrphParseONNXFromMem (hicann/ge 8.5.0
 * inc/parser/external/parser/onnx_parser.h). The simulated parse keeps the ONNX bytes in the graph and
 * reads the I/O through the simulation's ONNX runner, which refuses anything ONNX Runtime cannot open.
 */
#include <fstream>
#include <iterator>

#include "ge-sim-internal.h"

namespace {
ge::graphStatus ParseNow(const char *function, std::vector<uint8_t> bytes, const sim_ge::Options &params, ge::Graph &graph) {
  sim_ge::Options known;
  std::string input_shape;
  bool has_shape = false;
  for (const auto &param : params) {
    std::string key = param.first.GetString();
    if (key != "input_shape") {
      return sim_ge_fail(ge::GRAPH_PARAM_INVALID, function, "parser option '%s' is not simulated (only input_shape is)",
                         key.c_str());
    }
    input_shape = param.second.GetString();
    has_shape = true;
  }
  char err[512] = "";
  sim_onnx *onnx = nullptr;
  if (sim_onnx_open(bytes.data(), bytes.size(), 0, &onnx, err, sizeof err) != 0) {
    return sim_ge_fail(ge::GRAPH_FAILED, function, "not an ONNX model ONNX Runtime can open: %s", err);
  }
  auto impl = std::make_shared<ge::GraphImpl>();
  for (uint32_t i = 0; i < sim_onnx_input_count(onnx); i++) {
    sim_onnx_tensor_info info{};
    sim_onnx_input_info(onnx, i, &info);
    impl->inputs.push_back(sim_ge::SpecFromInfo(info));
  }
  for (uint32_t i = 0; i < sim_onnx_output_count(onnx); i++) {
    sim_onnx_tensor_info info{};
    sim_onnx_output_info(onnx, i, &info);
    impl->outputs.push_back(sim_ge::SpecFromInfo(info));
  }
  sim_onnx_close(onnx);
  std::string shape_err;
  if (has_shape && !sim_ge::ApplyShapeSpec(input_shape, &impl->inputs, &shape_err)) {
    return sim_ge_fail(ge::GRAPH_PARAM_INVALID, function, "input_shape: %s", shape_err.c_str());
  }
  if (has_shape) impl->parser_options["input_shape"] = input_shape;
  const ge::GraphImplPtr &previous = ge::GraphUtils::Impl(graph);
  if (previous) impl->name = previous->name;
  impl->onnx = std::move(bytes);
  ge::GraphUtils::SetImpl(graph, std::move(impl));
  return ge::GRAPH_SUCCESS;
}
/* GE's ONNX parser keeps process-wide state, so callers serialise parses (Huawei's GE backend parses
 * under a lock, src/model_instance_state.cpp ParseGraph); the gauge shows whether they did. */
ge::graphStatus Parse(const char *function, std::vector<uint8_t> bytes, const sim_ge::Options &params, ge::Graph &graph) {
  sim_ge_gauge(SIM_GE_CONCURRENT_PARSES, SIM_GE_MAX_CONCURRENT_PARSES, 1);
  sim_ge_delay("GE_SIM_PARSE_DELAY_MS");
  ge::graphStatus status = ParseNow(function, std::move(bytes), params, graph);
  sim_ge_gauge(SIM_GE_CONCURRENT_PARSES, SIM_GE_MAX_CONCURRENT_PARSES, -1);
  return status;
}
}  // namespace

namespace ge {
graphStatus aclgrphParseONNX(const char *model_file, const std::map<AscendString, AscendString> &parser_params,
                             Graph &graph) {
  sim_ge_count(SIM_GE_PARSE_CALLS, 1);
  if (Status injected = sim_ge_injected("aclgrphParseONNX")) return injected;
  if (!model_file) return sim_ge_fail(GRAPH_PARAM_INVALID, "aclgrphParseONNX", "model_file is NULL");
  std::ifstream file(model_file, std::ios::binary);
  if (!file) return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, "aclgrphParseONNX", "cannot open %s", model_file);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return Parse("aclgrphParseONNX", std::move(bytes), parser_params, graph);
}

graphStatus aclgrphParseONNXFromMem(const char *buffer, size_t size,
                                    const std::map<AscendString, AscendString> &parser_params, Graph &graph) {
  sim_ge_count(SIM_GE_PARSE_CALLS, 1);
  if (Status injected = sim_ge_injected("aclgrphParseONNXFromMem")) return injected;
  if (!buffer || size == 0) return sim_ge_fail(GRAPH_PARAM_INVALID, "aclgrphParseONNXFromMem", "buffer is NULL or empty");
  const uint8_t *bytes = reinterpret_cast<const uint8_t *>(buffer);
  return Parse("aclgrphParseONNXFromMem", std::vector<uint8_t>(bytes, bytes + size), parser_params, graph);
}
}  // namespace ge
