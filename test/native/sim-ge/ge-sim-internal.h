/*
 * What the four simulated GE libraries share. libgraph.so (every other one links it) holds the
 * process-wide state, behind the sim_ge_* exports below: the counters, the per-thread error text
 * GEGetErrorMsgV2 returns, and the GE_SIM_FAIL injection. The graph a parser produces is a
 * GraphImpl reached through ge::GraphUtils, the friend that graph.h declares for this purpose.
 */
#ifndef SERVE_FN_GE_SIM_INTERNAL_H
#define SERVE_FN_GE_SIM_INTERNAL_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ge-sim-api.h"

#include "sim-onnx.h" /* the ONNX runner of the simulated AscendCL (test/native/sim) */

enum sim_ge_counter_id {
  SIM_GE_INITIALIZE_CALLS,
  SIM_GE_FINALIZE_CALLS,
  SIM_GE_SESSIONS,
  SIM_GE_GRAPHS_ADDED,
  SIM_GE_GRAPHS_COMPILED,
  SIM_GE_GRAPHS_LOADED,
  SIM_GE_LOAD_GRAPH_CALLS,
  SIM_GE_EXECUTES,
  SIM_GE_CONCURRENT_EXECUTES,
  SIM_GE_MAX_CONCURRENT_EXECUTES,
  SIM_GE_ALLOCATED_OUTPUTS,
  SIM_GE_PARSE_CALLS,
  SIM_GE_BUILD_CALLS,
  SIM_GE_LIFECYCLE_ERRORS,
  SIM_GE_CONCURRENT_PARSES,
  SIM_GE_MAX_CONCURRENT_PARSES,
  SIM_GE_BUILD_ENVIRONMENTS,
  SIM_GE_COUNTER_COUNT
};

extern "C" {
/* Records "[sim ge <status>] <function>: <text>" as the calling thread's GE error and returns status. */
GE_SIM_EXPORT ge::Status sim_ge_fail(ge::Status status, const char *function, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
/* The status GE_SIM_FAIL injects into `function` (error text recorded), or SUCCESS. */
GE_SIM_EXPORT ge::Status sim_ge_injected(const char *function);
/* Copies the calling thread's GE error text into out (empty when none) and clears it. */
GE_SIM_EXPORT void sim_ge_take_error(char *out, size_t out_len);
GE_SIM_EXPORT void sim_ge_count(enum sim_ge_counter_id id, int64_t delta);
/* Adds delta to a gauge and raises the peak counter to the new value. */
GE_SIM_EXPORT void sim_ge_gauge(enum sim_ge_counter_id id, enum sim_ge_counter_id peak, int64_t delta);
GE_SIM_EXPORT int64_t sim_ge_counter(const char *name);
GE_SIM_EXPORT void sim_ge_reset_peaks(void);
/* Sleeps for the milliseconds the environment variable names (none when unset): the tests widen a
 * call with it so that concurrent callers overlap inside the simulation. */
GE_SIM_EXPORT void sim_ge_delay(const char *variable);
}

namespace ge {
/* One graph input or output as the simulation compiled it: dims of -1 are dynamic, within [min, max]. */
struct SimTensorSpec {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  std::vector<int64_t> min;
  std::vector<int64_t> max;
};

class GraphImpl {
 public:
  std::string name;
  std::vector<uint8_t> onnx;
  std::map<std::string, std::string> parser_options;
  std::vector<SimTensorSpec> inputs;
  std::vector<SimTensorSpec> outputs;
};

class GraphUtils {
 public:
  static const GraphImplPtr &Impl(const Graph &graph) { return graph.impl_; }
  static void SetImpl(Graph &graph, GraphImplPtr impl) { graph.impl_ = std::move(impl); }
};
}  // namespace ge

/* Option parsing shared by the parser, the runner and the compiler (ge-sim-options.cc, linked into each). */
namespace sim_ge {
using Options = std::map<ge::AscendString, ge::AscendString>;

/* The value of key, and whether it was given. */
bool Lookup(const Options &options, const char *key, std::string *value);
/* Applies "name:d,d;name2:d~d,-1" (GE's input_shape / ge.inputShape) to specs; false with err set when it does not fit. */
bool ApplyShapeSpec(const std::string &text, std::vector<ge::SimTensorSpec> *specs, std::string *err);
/* "1,4,8" into positive integers. */
bool ParseList(const std::string &text, std::vector<int64_t> *values, std::string *err);
/* Whether GE would compute in fp16 under precision_mode / precision_mode_v2 (absent: GE's inference default, fp16). */
bool ResolvePrecision(const std::string *mode, const std::string *mode_v2, bool *fp16, std::string *err);
/* The dims of an ONNX input or output as the runner reports them. */
ge::SimTensorSpec SpecFromInfo(const sim_onnx_tensor_info &info);
}  // namespace sim_ge

#endif
