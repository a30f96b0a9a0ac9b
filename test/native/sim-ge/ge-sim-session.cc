/*
 * libge_runner.so, process and session calls of hicann/ge 8.5.0 inc/external/ge/ge_api.h: GEInitialize,
 * GEFinalize, GEGetErrorMsgV2, and ge::Session's construction, AddGraph, RemoveGraph and CompileGraph.
 * The order serve-fn follows is enforced: aclInit and aclrtSetDevice before GEInitialize (stricter than
 * GE's GEInitialize page, which only forbids initialising twice), sessions between GEInitialize and
 * GEFinalize. Misuse gets a status and a GEGetErrorMsgV2 text.
 */
#include <cstdio>

#include "ge-sim-internal.h"
#include "ge-sim-runner.h"

namespace sim_ge {
RunnerState &Runner() {
  static RunnerState state;
  return state;
}

SimSession *FindSession(const char *function, uint64_t session_id, uint32_t *status) {
  RunnerState &runner = Runner();
  auto found = runner.sessions.find(session_id);
  if (session_id == 0 || found == runner.sessions.end()) {
    *status = sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, function, "this Session was refused when it was constructed");
    return nullptr;
  }
  if (!runner.initialized || found->second.generation != runner.generation) {
    *status = sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, function, "GEFinalize was called after this Session was created");
    return nullptr;
  }
  return &found->second;
}

SimGraph::SimGraph() { sim_ge_count(SIM_GE_GRAPHS_ADDED, 1); }

SimGraph::~SimGraph() {
  if (compiled) {
    sim_onnx_close(compiled);
    sim_ge_count(SIM_GE_GRAPHS_COMPILED, -1);
  }
  if (loaded) sim_ge_count(SIM_GE_GRAPHS_LOADED, -1);
  sim_ge_count(SIM_GE_GRAPHS_ADDED, -1);
}

static std::map<std::string, std::string> Plain(const Options &options) {
  std::map<std::string, std::string> plain;
  for (const auto &option : options) plain[option.first.GetString()] = option.second.GetString();
  return plain;
}

static const std::string *Find(const std::map<std::string, std::string> &options, const char *key) {
  auto found = options.find(key);
  return found == options.end() ? nullptr : &found->second;
}

static bool ParseDevice(const std::string *text, int32_t *device) {
  if (!text) return true;
  char *end = nullptr;
  long value = strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || value < 0 || value > 1023) return false;
  *device = static_cast<int32_t>(value);
  return true;
}

/* ge.inputShape, ge.dynamicDims, ge.dynamicNodeType and the precision keys of AddGraph (GE option keys, ge_api_types.h). */
static uint32_t ApplyGraphOptions(const char *function, const Options &options, SimGraph *graph) {
  std::string shape, dims, node_type, err;
  bool has_shape = Lookup(options, "ge.inputShape", &shape);
  bool has_dims = Lookup(options, "ge.dynamicDims", &dims);
  bool has_node_type = Lookup(options, "ge.dynamicNodeType", &node_type);
  if (has_shape && !ApplyShapeSpec(shape, &graph->inputs, &err)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "ge.inputShape: %s", err.c_str());
  }
  std::string mode, mode_v2;
  bool has_mode = Lookup(options, "ge.exec.precision_mode", &mode);
  bool has_mode_v2 = Lookup(options, "ge.exec.precision_mode_v2", &mode_v2);
  if (has_mode || has_mode_v2) {
    bool fp16 = true;
    if (!ResolvePrecision(has_mode ? &mode : nullptr, has_mode_v2 ? &mode_v2 : nullptr, &fp16, &err)) {
      return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "%s", err.c_str());
    }
    graph->fp16 = fp16;
  }
  if (has_node_type && (!has_dims || (node_type != "0" && node_type != "1"))) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "ge.dynamicNodeType '%s' needs ge.dynamicDims and is 0 or 1",
                       node_type.c_str());
  }
  if (!has_dims) return ge::SUCCESS;
  if (!has_shape) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "ge.dynamicDims needs ge.inputShape");
  size_t dynamic = 0;
  for (const ge::SimTensorSpec &input : graph->inputs) {
    for (int64_t dim : input.dims) dynamic += dim == -1 ? 1 : 0;
  }
  size_t start = 0;
  while (start <= dims.size()) {
    size_t end = dims.find(';', start);
    std::string gear_text = dims.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? dims.size() + 1 : end + 1;
    if (gear_text.empty()) continue;
    std::vector<int64_t> gear;
    if (!ParseList(gear_text, &gear, &err)) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "ge.dynamicDims: %s", err.c_str());
    if (gear.size() != dynamic) {
      return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "ge.dynamicDims gear '%s' gives %zu values, ge.inputShape has %zu -1 dims",
                         gear_text.c_str(), gear.size(), dynamic);
    }
    graph->gears.push_back(gear);
  }
  if (graph->gears.empty()) return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "ge.dynamicDims '%s' has no gear", dims.c_str());
  return ge::SUCCESS;
}
}  // namespace sim_ge

using namespace sim_ge;

namespace ge {
Status GEInitialize(const std::map<AscendString, AscendString> &options) {
  sim_ge_count(SIM_GE_INITIALIZE_CALLS, 1);
  if (Status injected = sim_ge_injected("GEInitialize")) return injected;
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  if (runner.initialized) return sim_ge_fail(FAILED, "GEInitialize", "GE is already initialized (GEFinalize first)");
  /* The other half of the conversion rule (ge-sim-compiler.cc): GE initialised inside a build environment
   * would be finalised by its aclgrphBuildFinalize. */
  if (sim_ge_counter("build_environments") > 0) {
    return sim_ge_fail(FAILED, "GEInitialize", "an aclgrphBuildInitialize environment is open: its aclgrphBuildFinalize would finalise GE");
  }
  if (!AclInitialized()) return sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, "GEInitialize", "aclInit has not been called");
  if (CurrentDevice() < 0) {
    return sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, "GEInitialize", "no device is set on this thread (aclrtSetDevice first)");
  }
  std::map<std::string, std::string> plain = Plain(options);
  int32_t device = 0;
  if (!ParseDevice(Find(plain, "ge.exec.deviceId"), &device)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "GEInitialize", "ge.exec.deviceId '%s' is not a device id",
                       Find(plain, "ge.exec.deviceId")->c_str());
  }
  bool fp16 = true;
  std::string err;
  if (!ResolvePrecision(Find(plain, "ge.exec.precision_mode"), Find(plain, "ge.exec.precision_mode_v2"), &fp16, &err)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "GEInitialize", "%s", err.c_str());
  }
  runner.global_options = plain;
  runner.initialized = true;
  runner.generation++;
  return SUCCESS;
}

/* The real GEFinalize tears its sessions down; the simulation finalizes too but reports the live ones. */
Status GEFinalize() {
  sim_ge_count(SIM_GE_FINALIZE_CALLS, 1);
  if (Status injected = sim_ge_injected("GEFinalize")) return injected;
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  if (!runner.initialized) return sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, "GEFinalize", "GEInitialize has not been called");
  runner.initialized = false;
  runner.global_options.clear();
  size_t alive = 0;
  for (const auto &session : runner.sessions) alive += session.second.generation == runner.generation ? 1 : 0;
  if (alive > 0) return sim_ge_fail(FAILED, "GEFinalize", "%zu sessions are still alive (destroy them before GEFinalize)", alive);
  return SUCCESS;
}

AscendString GEGetErrorMsgV2() {
  char text[1024];
  sim_ge_take_error(text, sizeof text);
  return AscendString(text);
}

Session::Session(const std::map<AscendString, AscendString> &options) {
  if (sim_ge_injected("Session")) return;
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  if (!runner.initialized) {
    sim_ge_fail(ACL_ERROR_GE_EXEC_NOT_INIT, "Session", "GEInitialize has not been called");
    return;
  }
  std::map<std::string, std::string> plain = Plain(options);
  SimSession session;
  session.generation = runner.generation;
  /* GEInitialize checked ge.exec.deviceId; ge.session_device_id overrides it. */
  ParseDevice(Find(runner.global_options, "ge.exec.deviceId"), &session.device);
  if (!ParseDevice(Find(plain, "ge.session_device_id"), &session.device)) {
    sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "Session", "ge.session_device_id '%s' is not a device id",
                Find(plain, "ge.session_device_id")->c_str());
    return;
  }
  /* Session-scoped precision options override the GEInitialize ones as a pair. */
  const std::map<std::string, std::string> &scope =
      Find(plain, "ge.exec.precision_mode") || Find(plain, "ge.exec.precision_mode_v2") ? plain : runner.global_options;
  std::string err;
  if (!ResolvePrecision(Find(scope, "ge.exec.precision_mode"), Find(scope, "ge.exec.precision_mode_v2"), &session.fp16, &err)) {
    sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "Session", "%s", err.c_str());
    return;
  }
  sessionId_ = runner.next_session++;
  runner.sessions.emplace(sessionId_, std::move(session));
  sim_ge_count(SIM_GE_SESSIONS, 1);
}

/* A destructor cannot return a status: misuse here is printed, recorded and counted (lifecycle_errors). */
Session::~Session() {
  if (sessionId_ == 0) return;
  RunnerState &runner = Runner();
  std::map<uint32_t, std::shared_ptr<SimGraph>> graphs; /* released after the lock */
  std::lock_guard<std::mutex> guard(runner.lock);
  auto found = runner.sessions.find(sessionId_);
  graphs.swap(found->second.graphs);
  size_t outputs = 0;
  for (const auto &output : runner.ge_outputs) outputs += output.second == sessionId_ ? 1 : 0;
  const char *problem = nullptr;
  char text[256];
  if (!runner.initialized || found->second.generation != runner.generation) {
    problem = "the Session is destroyed after GEFinalize";
  } else if (outputs > 0) {
    snprintf(text, sizeof text, "%zu outputs GE allocated for this Session are still alive", outputs);
    problem = text;
  }
  if (problem) {
    sim_ge_fail(FAILED, "~Session", "%s", problem);
    fprintf(stderr, "[sim ge] ~Session: %s\n", problem);
    sim_ge_count(SIM_GE_LIFECYCLE_ERRORS, 1);
  }
  runner.sessions.erase(found);
  sim_ge_count(SIM_GE_SESSIONS, -1);
}

uint64_t Session::GetSessionId() const { return sessionId_; }

static Status Add(const char *function, uint64_t session_id, uint32_t graph_id, const Graph &graph,
                  const std::map<AscendString, AscendString> &options, bool copy) {
  if (Status injected = sim_ge_injected(function)) return injected;
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  Status status = SUCCESS;
  SimSession *session = FindSession(function, session_id, &status);
  if (!session) return status;
  const GraphImplPtr &impl = GraphUtils::Impl(graph);
  if (!impl || impl->onnx.empty()) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "the graph holds no parsed model (aclgrphParseONNX first)");
  }
  if (session->graphs.count(graph_id)) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "graph id %u is already added to this session", graph_id);
  }
  auto added = std::make_shared<SimGraph>();
  added->impl = copy ? std::make_shared<GraphImpl>(*impl) : impl;
  added->inputs = impl->inputs;
  if ((status = ApplyGraphOptions(function, options, added.get())) != SUCCESS) return status;
  session->graphs.emplace(graph_id, std::move(added));
  return SUCCESS;
}

Status Session::AddGraph(uint32_t graph_id, const Graph &graph) { return Add("AddGraph", sessionId_, graph_id, graph, {}, false); }

Status Session::AddGraph(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options) {
  return Add("AddGraph", sessionId_, graph_id, graph, options, false);
}

Status Session::AddGraphWithCopy(uint32_t graph_id, const Graph &graph) {
  return Add("AddGraphWithCopy", sessionId_, graph_id, graph, {}, true);
}

Status Session::AddGraphWithCopy(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options) {
  return Add("AddGraphWithCopy", sessionId_, graph_id, graph, options, true);
}

Status Session::RemoveGraph(uint32_t graph_id) {
  if (Status injected = sim_ge_injected("RemoveGraph")) return injected;
  RunnerState &runner = Runner();
  std::shared_ptr<SimGraph> removed; /* released after the lock */
  std::lock_guard<std::mutex> guard(runner.lock);
  Status status = SUCCESS;
  SimSession *session = FindSession("RemoveGraph", sessionId_, &status);
  if (!session) return status;
  auto found = session->graphs.find(graph_id);
  if (found == session->graphs.end()) {
    return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, "RemoveGraph", "graph id %u is not in this session", graph_id);
  }
  removed = found->second;
  session->graphs.erase(found);
  return SUCCESS;
}

/* The compile opens the ONNX Runtime session that executes the graph, with the graph's or else the session's precision. */
Status Session::CompileGraph(uint32_t graph_id) {
  if (Status injected = sim_ge_injected("CompileGraph")) return injected;
  RunnerState &runner = Runner();
  std::unique_lock<std::mutex> guard(runner.lock);
  Status status = SUCCESS;
  SimSession *session = FindSession("CompileGraph", sessionId_, &status);
  if (!session) return status;
  auto found = session->graphs.find(graph_id);
  if (found == session->graphs.end()) {
    return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, "CompileGraph", "graph id %u is not in this session", graph_id);
  }
  std::shared_ptr<SimGraph> graph = found->second;
  bool fp16 = graph->fp16.value_or(session->fp16);
  if (graph->compiled) return SUCCESS;
  guard.unlock();
  char err[512] = "";
  sim_onnx *compiled = nullptr;
  if (sim_onnx_open(graph->impl->onnx.data(), graph->impl->onnx.size(), fp16 ? 1 : 0, &compiled, err, sizeof err) != 0) {
    return sim_ge_fail(ACL_ERROR_GE_INTERNAL_ERROR, "CompileGraph", "ONNX Runtime refused the graph: %s", err);
  }
  guard.lock();
  if (graph->compiled) {
    sim_onnx_close(compiled);
  } else {
    graph->compiled = compiled;
    sim_ge_count(SIM_GE_GRAPHS_COMPILED, 1);
  }
  return SUCCESS;
}
}  // namespace ge

extern "C" {
GE_SIM_EXPORT int64_t sim_counter(const char *name) { return sim_ge_counter(name); }
GE_SIM_EXPORT void sim_reset_peaks(void) { sim_ge_reset_peaks(); }
}
