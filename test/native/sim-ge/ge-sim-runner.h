/*
 * State of the simulated libge_runner.so shared by its session calls (ge-sim-session.cc) and its
 * stream calls (ge-sim-execute.cc). One mutex guards it; executes run outside it.
 */
#ifndef SERVE_FN_GE_SIM_RUNNER_H
#define SERVE_FN_GE_SIM_RUNNER_H

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ge {
class GraphImpl;
struct SimTensorSpec;
}  // namespace ge
struct sim_onnx;

namespace sim_ge {
/* ge-sim-acl.cc */
bool AclInitialized();
int32_t CurrentDevice();
int32_t CheckStream(const char *function, void *stream);
size_t DeviceSpan(const void *address, int32_t device);
int32_t DeviceMalloc(void **address, size_t size);
int32_t DeviceFree(void *address);
uint32_t ExecuteDelayMs();

/* A graph added to a session; its constructor and destructor keep the graph counters. */
struct SimGraph {
  std::shared_ptr<ge::GraphImpl> impl;
  std::vector<ge::SimTensorSpec> inputs; /* the parsed inputs with ge.inputShape applied */
  /* ge.dynamicDims: each gear gives the values of the inputs' -1 dims, in order; empty when none. */
  std::vector<std::vector<int64_t>> gears;
  /* Graph-scoped ge.exec.precision_mode(_v2), which wins over the session's; unset when absent. */
  std::optional<bool> fp16;
  sim_onnx *compiled = nullptr;
  bool loaded = false;
  void *stream = nullptr;
  SimGraph();
  SimGraph(const SimGraph &) = delete;
  SimGraph &operator=(const SimGraph &) = delete;
  ~SimGraph();
};

struct SimSession {
  uint64_t generation = 0; /* the GEInitialize it was created under */
  int32_t device = 0;
  bool fp16 = true;
  std::map<uint32_t, std::shared_ptr<SimGraph>> graphs;
};

struct RunnerState {
  std::mutex lock;
  bool initialized = false;
  uint64_t generation = 0;
  std::map<std::string, std::string> global_options;
  uint64_t next_session = 1;
  std::map<uint64_t, SimSession> sessions;
  std::map<void *, uint64_t> ge_outputs; /* device outputs GE allocated, by the session that owns them */
};
RunnerState &Runner();

/* The live session of that id under the current GEInitialize, or nullptr with the error recorded. Lock held. */
SimSession *FindSession(const char *function, uint64_t session_id, uint32_t *status);
}  // namespace sim_ge

#endif
