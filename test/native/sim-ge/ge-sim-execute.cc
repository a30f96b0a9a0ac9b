/*
 * libge_runner.so, the stream calls of hicann/ge 8.5.0 inc/external/ge/ge_api.h: Session::LoadGraph
 * (once per compiled graph, binding its stream) and Session::ExecuteGraphWithStreamAsync, plus their
 * extern "C" wrappers. Like the simulated AscendCL's streams, an execute completes before it returns.
 */
#include <atomic>
#include <chrono>
#include <thread>

#include "ge-sim-internal.h"
#include "ge-sim-runner.h"

using namespace sim_ge;

namespace {
/* The loaded graph `function` works on, after the session, graph, device and stream checks. */
std::shared_ptr<SimGraph> LoadedGraph(const char *function, uint64_t session_id, uint32_t graph_id, void *stream,
                                      int32_t *device, ge::Status *status) {
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  SimSession *session = FindSession(function, session_id, status);
  if (!session) return nullptr;
  auto found = session->graphs.find(graph_id);
  if (found == session->graphs.end()) {
    *status = sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, function, "graph id %u is not in this session", graph_id);
    return nullptr;
  }
  if (!found->second->loaded) {
    *status = sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, function, "graph %u is not loaded (LoadGraph first)", graph_id);
    return nullptr;
  }
  if (CurrentDevice() != session->device) {
    *status = sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "the calling thread's device is %d, the session's is %d",
                          CurrentDevice(), session->device);
    return nullptr;
  }
  if (int32_t acl = CheckStream(function, stream)) {
    *status = sim_ge_fail(static_cast<ge::Status>(acl), function, "stream %p is not a live stream of the calling thread's context", stream);
    return nullptr;
  }
  /* GE's LoadGraph page allows another stream once the load stream is synchronised; this AscendCL keeps
   * no record of synchronisations, so the simulation holds every execute to the load stream. */
  if (stream != found->second->stream) {
    *status = sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, function, "stream %p is not the stream %p graph %u was loaded on", stream,
                          found->second->stream, graph_id);
    return nullptr;
  }
  *device = session->device;
  return found->second;
}

/* Checks the inputs against the compiled graph: count, type, device memory, and shape (a gear when there are gears). */
ge::Status CheckInputs(const SimGraph &graph, int32_t device, const std::vector<gert::Tensor> &inputs,
                       uint32_t dim_counts[SIM_ONNX_MAX_IO], int64_t dims[SIM_ONNX_MAX_IO][SIM_ONNX_MAX_DIMS]) {
  const char *fn = "ExecuteGraphWithStreamAsync";
  if (inputs.size() != graph.inputs.size()) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "%zu inputs given, the graph has %zu", inputs.size(), graph.inputs.size());
  }
  std::vector<int64_t> dynamic;
  for (size_t i = 0; i < inputs.size(); i++) {
    const ge::SimTensorSpec &spec = graph.inputs[i];
    const gert::Tensor &tensor = inputs[i];
    const gert::Shape &shape = tensor.GetStorageShape();
    if (tensor.GetDataType() != spec.dtype) {
      return sim_ge_fail(ACL_ERROR_GE_DATATYPE_INVALID, fn, "input %zu ('%s') has data type %d, the graph takes %d", i,
                         spec.name.c_str(), static_cast<int>(tensor.GetDataType()), spec.dtype);
    }
    if (shape.GetDimNum() != spec.dims.size()) {
      return sim_ge_fail(ACL_ERROR_GE_SHAPE_INVALID, fn, "input %zu ('%s') has %zu dims, the graph has %zu", i, spec.name.c_str(),
                         shape.GetDimNum(), spec.dims.size());
    }
    dim_counts[i] = static_cast<uint32_t>(spec.dims.size());
    for (size_t d = 0; d < spec.dims.size(); d++) {
      int64_t dim = shape.GetDim(d);
      dims[i][d] = dim;
      if (spec.dims[d] == -1) dynamic.push_back(dim);
      if (dim < spec.min[d] || dim > spec.max[d] || (spec.dims[d] != -1 && dim != spec.dims[d])) {
        return sim_ge_fail(ACL_ERROR_GE_SHAPE_INVALID, fn, "dim %zu of input %zu ('%s') is %lld, outside what the graph was compiled for",
                           d, i, spec.name.c_str(), static_cast<long long>(dim));
      }
    }
    int64_t bytes = ge::GetSizeInBytes(shape.GetShapeSize(), tensor.GetDataType());
    size_t span = tensor.GetPlacement() == gert::kOnDeviceHbm ? DeviceSpan(tensor.GetAddr(), device) : 0;
    if (span == 0) {
      return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID, fn, "input %zu (%p) is not a live device allocation on device %d",
                         i, tensor.GetAddr(), device);
    }
    if (bytes < 0 || span < static_cast<size_t>(bytes)) {
      return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn, "input %zu needs %lld bytes, its allocation holds %zu", i,
                         static_cast<long long>(bytes), span);
    }
  }
  if (graph.gears.empty()) return ge::SUCCESS;
  for (const std::vector<int64_t> &gear : graph.gears) {
    if (gear == dynamic) return ge::SUCCESS;
  }
  std::string given;
  for (int64_t value : dynamic) given += (given.empty() ? "" : ",") + std::to_string(value);
  return sim_ge_fail(ACL_ERROR_GE_SHAPE_INVALID, fn, "the dynamic dims (%s) are not one of the ge.dynamicDims gears", given.c_str());
}

/* TensorAddrManager of the outputs GE allocates: frees them with aclrtFree on the thread that drops them. */
ge::graphStatus ManageGeOutput(gert::TensorAddress address, gert::TensorOperateType operation, void **out) {
  if (operation == gert::kGetTensorAddress) {
    *out = address;
    return ge::GRAPH_SUCCESS;
  }
  if (operation != gert::kFreeTensor) return sim_ge_fail(ge::GRAPH_FAILED, "TensorAddrManager", "operation %d is not simulated", operation);
  if (int32_t acl = DeviceFree(address)) {
    sim_ge_count(SIM_GE_LIFECYCLE_ERRORS, 1);
    return sim_ge_fail(static_cast<ge::Status>(acl), "TensorAddrManager", "aclrtFree of output %p failed (no context on this thread?)", address);
  }
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  runner.ge_outputs.erase(address);
  sim_ge_count(SIM_GE_ALLOCATED_OUTPUTS, -1);
  return ge::GRAPH_SUCCESS;
}

gert::StorageShape ShapeOf(uint32_t dim_count, const int64_t *dims) {
  gert::StorageShape shape;
  for (gert::Shape *part : {&shape.MutableOriginShape(), &shape.MutableStorageShape()}) {
    part->SetDimNum(dim_count);
    for (uint32_t d = 0; d < dim_count; d++) part->SetDim(d, dims[d]);
  }
  return shape;
}

ge::Status AllocateOutputs(uint64_t session_id, const sim_onnx_result &result, std::vector<gert::Tensor> &outputs) {
  for (uint32_t i = 0; i < result.count; i++) {
    void *address = nullptr;
    /* The sim AscendCL refuses empty allocations, so an empty output still takes one byte. */
    if (int32_t acl = DeviceMalloc(&address, result.bytes[i] > 0 ? result.bytes[i] : 1)) {
      outputs.clear();
      return sim_ge_fail(ACL_ERROR_GE_MEMORY_ALLOCATION, "ExecuteGraphWithStreamAsync", "aclrtMalloc of output %u failed (%d)", i, acl);
    }
    memcpy(address, result.data[i], result.bytes[i]);
    {
      RunnerState &runner = Runner();
      std::lock_guard<std::mutex> guard(runner.lock);
      runner.ge_outputs[address] = session_id;
    }
    sim_ge_count(SIM_GE_ALLOCATED_OUTPUTS, 1);
    outputs.emplace_back(ShapeOf(result.dim_count[i], result.dims[i]), gert::StorageFormat(), gert::kOnDeviceHbm,
                         static_cast<ge::DataType>(result.dtype[i]), address, ManageGeOutput);
  }
  return ge::SUCCESS;
}

ge::Status WriteOutputs(int32_t device, const sim_onnx_result &result, std::vector<gert::Tensor> &outputs) {
  const char *fn = "ExecuteGraphWithStreamAsync";
  if (outputs.size() != result.count) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, fn, "%zu outputs given, the graph has %u", outputs.size(), result.count);
  }
  for (uint32_t i = 0; i < result.count; i++) {
    gert::Tensor &tensor = outputs[i];
    if (tensor.GetDataType() != result.dtype[i]) {
      return sim_ge_fail(ACL_ERROR_GE_DATATYPE_INVALID, fn, "output %u has data type %d, the graph gives %d", i,
                         static_cast<int>(tensor.GetDataType()), result.dtype[i]);
    }
    size_t span = tensor.GetPlacement() == gert::kOnDeviceHbm ? DeviceSpan(tensor.GetAddr(), device) : 0;
    if (span == 0) {
      return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID, fn, "output %u (%p) is not a live device allocation on device %d", i,
                         tensor.GetAddr(), device);
    }
    if (span < result.bytes[i]) {
      return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, fn, "output %u needs %zu bytes, its allocation holds %zu", i,
                         result.bytes[i], span);
    }
  }
  /* GE writes the shapes it computed back into the caller's output tensors. */
  for (uint32_t i = 0; i < result.count; i++) {
    memcpy(outputs[i].GetTensorData().GetAddr(), result.data[i], result.bytes[i]);
    gert::StorageShape shape = ShapeOf(result.dim_count[i], result.dims[i]);
    outputs[i].MutableOriginShape() = shape.GetOriginShape();
    outputs[i].MutableStorageShape() = shape.GetStorageShape();
  }
  return ge::SUCCESS;
}
}  // namespace

namespace ge {
Status Session::LoadGraph(const uint32_t graph_id, const std::map<AscendString, AscendString> &options, void *stream) const {
  (void)options; /* the simulation takes no load options; the GE backend passes none */
  sim_ge_count(SIM_GE_LOAD_GRAPH_CALLS, 1);
  if (Status injected = sim_ge_injected("LoadGraph")) return injected;
  RunnerState &runner = Runner();
  std::lock_guard<std::mutex> guard(runner.lock);
  Status status = SUCCESS;
  SimSession *session = FindSession("LoadGraph", sessionId_, &status);
  if (!session) return status;
  auto found = session->graphs.find(graph_id);
  if (found == session->graphs.end()) {
    return sim_ge_fail(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, "LoadGraph", "graph id %u is not in this session", graph_id);
  }
  SimGraph &graph = *found->second;
  if (!graph.compiled) return sim_ge_fail(ACL_ERROR_GE_LOAD_MODEL, "LoadGraph", "graph %u is not compiled (CompileGraph first)", graph_id);
  if (graph.loaded) return sim_ge_fail(ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED, "LoadGraph", "graph %u is already loaded", graph_id);
  if (CurrentDevice() != session->device) {
    return sim_ge_fail(ACL_ERROR_GE_PARAM_INVALID, "LoadGraph", "the calling thread's device is %d, the session's is %d",
                       CurrentDevice(), session->device);
  }
  if (int32_t acl = CheckStream("LoadGraph", stream)) {
    return sim_ge_fail(static_cast<Status>(acl), "LoadGraph", "stream %p is not a live stream of the calling thread's context", stream);
  }
  graph.loaded = true;
  graph.stream = stream;
  sim_ge_count(SIM_GE_GRAPHS_LOADED, 1);
  return SUCCESS;
}

Status Session::ExecuteGraphWithStreamAsync(uint32_t graph_id, void *stream, const std::vector<gert::Tensor> &inputs,
                                            std::vector<gert::Tensor> &outputs) {
  const char *fn = "ExecuteGraphWithStreamAsync";
  if (Status injected = sim_ge_injected(fn)) return injected;
  int32_t device = 0;
  Status status = SUCCESS;
  std::shared_ptr<SimGraph> graph = LoadedGraph(fn, sessionId_, graph_id, stream, &device, &status);
  if (!graph) return status;
  uint32_t dim_counts[SIM_ONNX_MAX_IO] = {};
  int64_t dims[SIM_ONNX_MAX_IO][SIM_ONNX_MAX_DIMS] = {};
  if ((status = CheckInputs(*graph, device, inputs, dim_counts, dims)) != SUCCESS) return status;
  const void *data[SIM_ONNX_MAX_IO] = {};
  for (size_t i = 0; i < inputs.size(); i++) data[i] = inputs[i].GetAddr();
  sim_ge_gauge(SIM_GE_CONCURRENT_EXECUTES, SIM_GE_MAX_CONCURRENT_EXECUTES, 1);
  if (uint32_t delay = ExecuteDelayMs()) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  sim_onnx_result result{};
  char err[512] = "";
  int rc = sim_onnx_run(graph->compiled, data, dim_counts, dims, &result, err, sizeof err);
  sim_ge_count(SIM_GE_CONCURRENT_EXECUTES, -1);
  if (rc != 0) return sim_ge_fail(ACL_ERROR_GE_INTERNAL_ERROR, fn, "ONNX Runtime failed: %s", err);
  status = outputs.empty() ? AllocateOutputs(sessionId_, result, outputs) : WriteOutputs(device, result, outputs);
  sim_onnx_result_free(&result);
  if (status == SUCCESS) sim_ge_count(SIM_GE_EXECUTES, 1);
  return status;
}
}  // namespace ge

extern "C" {
ge::Status GeSessionLoadGraph(ge::Session &session, uint32_t graph_id,
                              const std::map<ge::AscendString, ge::AscendString> &options, void *stream) {
  return session.LoadGraph(graph_id, options, stream);
}

ge::Status GeSessionExecuteGraphWithStreamAsync(ge::Session &session, uint32_t graph_id, void *stream,
                                                const std::vector<gert::Tensor> &inputs, std::vector<gert::Tensor> &outputs) {
  return session.ExecuteGraphWithStreamAsync(graph_id, stream, inputs, outputs);
}
}
