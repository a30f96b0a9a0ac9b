/*
 * Our transcription of the GE entry points serve-fn calls, from hicann/ge branch 8.5.0:
 * inc/external/ge/ge_api.h (libge_runner.so), inc/parser/external/parser/onnx_parser.h
 * (libfmk_onnx_parser.so), inc/external/ge/ge_ir_build.h (libge_compiler.so), and the status codes
 * of inc/external/ge/ge_error_codes.h and ge_api_error_codes.h. Parameter types and const-ness are
 * the headers' (note the non-const map of aclgrphBuildInitialize and the const LoadGraph), so the
 * mangled names equal the real exports. Only the AscendString overloads are declared.
 * This transcription is independent of the addon's (native/src/ge-api.h) on purpose: the addon
 * linking and running against these libraries cross-checks both against the CANN headers.
 */
#ifndef SERVE_FN_GE_SIM_API_H
#define SERVE_FN_GE_SIM_API_H

#include <map>
#include <memory>
#include <vector>

#include "ge-sim-exe-graph.h"
#include "ge-sim-graph.h"

namespace ge {
using Status = uint32_t;
constexpr Status SUCCESS = 0;
constexpr Status FAILED = 0xFFFFFFFFU; /* ge_api_error_codes.h: GE_ERRORNO(0b11, 0b11, 0b111, 0xFF, 0b11111, FAILED, 0xFFF) */
}  // namespace ge

/* inc/external/ge/ge_error_codes.h */
static const uint32_t ACL_ERROR_GE_PARAM_INVALID = 145000U;
static const uint32_t ACL_ERROR_GE_EXEC_NOT_INIT = 145001U;
static const uint32_t ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID = 145002U;
static const uint32_t ACL_ERROR_GE_EXEC_MODEL_ID_INVALID = 145003U;
static const uint32_t ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID = 145006U;
static const uint32_t ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID = 145007U;
static const uint32_t ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED = 145009U;
static const uint32_t ACL_ERROR_GE_SHAPE_INVALID = 145021U;
static const uint32_t ACL_ERROR_GE_DATATYPE_INVALID = 145022U;
static const uint32_t ACL_ERROR_GE_MEMORY_ALLOCATION = 245000U;
static const uint32_t ACL_ERROR_GE_INTERNAL_ERROR = 545000U;
static const uint32_t ACL_ERROR_GE_LOAD_MODEL = 545001U;

namespace ge {
/* ge_api.h */
GE_SIM_EXPORT Status GEInitialize(const std::map<AscendString, AscendString> &options);
GE_SIM_EXPORT Status GEFinalize();
GE_SIM_EXPORT ge::AscendString GEGetErrorMsgV2();

class GE_SIM_EXPORT Session {
 public:
  explicit Session(const std::map<AscendString, AscendString> &options);
  ~Session();
  Status AddGraph(uint32_t graph_id, const Graph &graph);
  Status AddGraph(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options);
  Status AddGraphWithCopy(uint32_t graph_id, const Graph &graph);
  Status AddGraphWithCopy(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options);
  Status RemoveGraph(uint32_t graph_id);
  Status LoadGraph(const uint32_t graph_id, const std::map<AscendString, AscendString> &options, void *stream) const;
  Status ExecuteGraphWithStreamAsync(uint32_t graph_id, void *stream, const std::vector<gert::Tensor> &inputs,
                                     std::vector<gert::Tensor> &outputs);
  Status CompileGraph(uint32_t graph_id);
  uint64_t GetSessionId() const;

 private:
  uint64_t sessionId_{0};
};

/* onnx_parser.h */
GE_SIM_EXPORT graphStatus aclgrphParseONNX(const char *model_file,
                                           const std::map<ge::AscendString, ge::AscendString> &parser_params,
                                           ge::Graph &graph);
GE_SIM_EXPORT graphStatus aclgrphParseONNXFromMem(const char *buffer, size_t size,
                                                  const std::map<ge::AscendString, ge::AscendString> &parser_params,
                                                  ge::Graph &graph);

/* ge_ir_build.h */
struct ModelBufferData {
  std::shared_ptr<uint8_t> data = nullptr;
  uint64_t length;
};
GE_SIM_EXPORT graphStatus aclgrphBuildInitialize(std::map<AscendString, AscendString> &global_options);
GE_SIM_EXPORT void aclgrphBuildFinalize();
GE_SIM_EXPORT graphStatus aclgrphBuildModel(const ge::Graph &graph,
                                            const std::map<AscendString, AscendString> &build_options,
                                            ModelBufferData &model);
GE_SIM_EXPORT graphStatus aclgrphSaveModel(const char_t *output_file, const ModelBufferData &model);
}  // namespace ge

/* ge_api.h: the C-linkage wrappers of the two stream calls. */
extern "C" {
GE_SIM_EXPORT ge::Status GeSessionLoadGraph(ge::Session &session, uint32_t graph_id,
                                            const std::map<ge::AscendString, ge::AscendString> &options, void *stream);
GE_SIM_EXPORT ge::Status GeSessionExecuteGraphWithStreamAsync(ge::Session &session, uint32_t graph_id, void *stream,
                                                              const std::vector<gert::Tensor> &inputs,
                                                              std::vector<gert::Tensor> &outputs);
}

#endif
