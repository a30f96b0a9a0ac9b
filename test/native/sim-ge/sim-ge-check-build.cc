/*
 * sim-ge-check build: the offline-model calls of ge_ir_build.h, in order and out of it.
 */
#include <sys/stat.h>

#include "sim-ge-check.h"

namespace check {
void RunBuild(const char *onnx, const char *output_dir) {
  ge::Graph graph;
  ge::aclgrphParseONNX(onnx, {}, graph);
  ge::ModelBufferData model;
  Print("build-before-initialize", ge::aclgrphBuildModel(graph, {}, model));
  Options no_soc;
  Print("initialize-without-soc-version", ge::aclgrphBuildInitialize(no_soc));
  Options global{{"ge.socVersion", "Ascend310P3"}};
  Print("initialize", ge::aclgrphBuildInitialize(global));
  Print("initialize-again", ge::aclgrphBuildInitialize(global));
  Print("build-unsimulated-option", ge::aclgrphBuildModel(graph, {{"log", "debug"}}, model));
  Print("build-dynamic-without-input-shape", ge::aclgrphBuildModel(graph, {}, model));
  Print("build-gears-on-fixed-batch", ge::aclgrphBuildModel(graph, {{"input_shape", "x:2,3"}, {"ge.dynamicBatchSize", "1,4,8"}}, model));
  Print("build-empty-graph", ge::aclgrphBuildModel(ge::Graph("empty"), {{"input_shape", "x:2,3"}}, model));
  Print("build", ge::aclgrphBuildModel(graph, {{"input_shape", "x:-1,3"}, {"ge.dynamicBatchSize", "1,4,8"}, {"ge.exec.precision_mode", "force_fp32"}}, model));
  Print("build-calls", Counter("libge_runner.so", "build_calls"));
  Print("model-length-positive", model.length > 0);
  std::string base = std::string(output_dir) + "/converted";
  Print("save", ge::aclgrphSaveModel(base.c_str(), model));
  struct stat saved {};
  Print("saved-with-om-suffix", stat((base + ".om").c_str(), &saved) == 0 && static_cast<uint64_t>(saved.st_size) == model.length);
  Print("saved-without-suffix-absent", stat(base.c_str(), &saved) != 0);
  Print("save-empty-model", ge::aclgrphSaveModel(base.c_str(), ge::ModelBufferData{}));
  Print("save-unwritable", ge::aclgrphSaveModel("/nonexistent/dir/model", model));
  ge::ModelBufferData fp16_model;
  Print("build-static-default-precision", ge::aclgrphBuildModel(graph, {{"input_shape", "x:2,3"}}, fp16_model));
  std::string static_base = std::string(output_dir) + "/static";
  Print("save-static", ge::aclgrphSaveModel(static_base.c_str(), fp16_model));
  ge::aclgrphBuildFinalize();
  Print("finalize-twice-says-why", (ge::aclgrphBuildFinalize(), ErrorContains("aclgrphBuildFinalize: aclgrphBuildInitialize has not been called")));
  Print("build-after-finalize", ge::aclgrphBuildModel(graph, {{"input_shape", "x:2,3"}}, model));
}
}  // namespace check
