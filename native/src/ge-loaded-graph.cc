#include "ge-loaded-graph.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ge-environment.h"
#include "ge-status.h"

namespace {

// The option key GE reads a session's device from (metadef 8.5.0 ge_api_types.h
// OPTION_SESSION_DEVICE_ID); the GE backend sets it on every session too.
constexpr const char *kSessionDeviceId = "ge.session_device_id";

gert::Tensor DeviceTensor(const GeDims &dims, ge::DataType dataType, void *address) {
  gert::StorageShape shape;
  for (uint32_t d = 0; d < dims.count; d++) {
    shape.MutableOriginShape().AppendDim(dims.values[d]);
    shape.MutableStorageShape().AppendDim(dims.values[d]);
  }
  gert::StorageFormat format(ge::FORMAT_ND, ge::FORMAT_ND, gert::ExpandDimsType());
  return gert::Tensor(shape, format, gert::kOnDeviceHbm, dataType, address);
}

}  // namespace

GeLoadedGraph::GeLoadedGraph(std::unique_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {}

GeLoadedGraph::~GeLoadedGraph() { Unload(); }

NpuStatus GeLoadedGraph::Load(std::unique_ptr<DeviceRuntime> runtime, const GeLoadRequest &request,
                              std::unique_ptr<GeLoadedGraph> *out) {
  std::unique_ptr<GeLoadedGraph> graph(new GeLoadedGraph(std::move(runtime)));
  NpuStatus status = graph->runtime_->MakeCurrent();
  if (status.ok) status = GeEnvironment::Acquire(request.globalOptions);
  graph->geHeld_ = status.ok;
  if (status.ok) graph->slots_.resize(request.slots);
  for (uint32_t i = 0; status.ok && i < request.slots; i++) {
    graph->slots_[i].graphId = i;
    status = graph->LoadSlot(request, &graph->slots_[i]);
  }
  // A failure unloads what was built (the destructor), sessions and the GE share included.
  if (status.ok) *out = std::move(graph);
  return status;
}

NpuStatus GeLoadedGraph::LoadSlot(const GeLoadRequest &request, Slot *slot) {
  StringOptions sessionOptions = request.sessionOptions;
  sessionOptions[kSessionDeviceId] = std::to_string(runtime_->deviceId());
  slot->session.reset(new ge::Session(ToGeOptions(sessionOptions)));
  // Parsed once per slot, as the GE backend does: each session compiles its own graph.
  ge::Graph graph;
  NpuStatus status = GeEnvironment::ParseOnnx(request.source, request.parserOptions, &graph);
  if (!status.ok) return status;
  status = GeCheck(slot->session->AddGraph(slot->graphId, graph, ToGeOptions(request.graphOptions)), "AddGraph");
  slot->graphAdded = status.ok;
  if (status.ok) status = GeCheck(slot->session->CompileGraph(slot->graphId), "CompileGraph");
  // Each slot's own stream, created after its CompileGraph: the documented order is CompileGraph ->
  // aclrtCreateStream -> LoadGraph (docs/graph_engine_api/LoadGraph.md).
  if (status.ok) status = ACL_CALL(runtime_->api(), aclrtCreateStream, (&slot->stream));
  if (status.ok) status = GeCheck(slot->session->LoadGraph(slot->graphId, ge::Options(), slot->stream), "LoadGraph");
  return status;
}

NpuStatus GeLoadedGraph::Grow(std::vector<Buffer> *buffers, size_t index, size_t bytes, bool device) {
  if (buffers->size() <= index) buffers->resize(index + 1);
  Buffer &buffer = (*buffers)[index];
  if (buffer.capacity >= bytes && buffer.address) return NpuStatus::Ok();
  const AclApi &api = runtime_->api();
  if (buffer.address) {
    NpuStatus freed = device ? ACL_CALL(api, aclrtFree, (buffer.address)) : ACL_CALL(api, aclrtFreeHost, (buffer.address));
    buffer = Buffer();
    if (!freed.ok) return freed;
  }
  // AscendCL refuses zero-byte allocations; an empty tensor still gets a valid address.
  size_t capacity = std::max<size_t>(bytes, 1);
  NpuStatus status = device ? ACL_CALL(api, aclrtMalloc, (&buffer.address, capacity, ACL_MEM_MALLOC_HUGE_FIRST))
                            : ACL_CALL(api, aclrtMallocHost, (&buffer.address, capacity));
  if (status.ok) buffer.capacity = capacity;
  return status;
}

NpuStatus GeLoadedGraph::Stage(Slot *slot, const GeExecuteRequest &request, std::vector<gert::Tensor> *inputs,
                               std::vector<gert::Tensor> *outputs) {
  const AclApi &api = runtime_->api();
  inputs->reserve(request.inputs.size());
  outputs->reserve(request.callerOutputs.size());
  for (size_t i = 0; i < request.inputs.size(); i++) {
    const GeInputTensor &input = request.inputs[i];
    NpuStatus status = Grow(&slot->inputDevice, i, input.size, true);
    if (status.ok) status = Grow(&slot->inputHost, i, input.size, false);
    if (!status.ok) return status;
    void *device = slot->inputDevice[i].address;
    std::memcpy(slot->inputHost[i].address, input.data, input.size);
    status = ACL_CALL(api, aclrtMemcpyAsync, (device, slot->inputDevice[i].capacity, slot->inputHost[i].address,
                                              input.size, ACL_MEMCPY_HOST_TO_DEVICE, slot->stream));
    if (!status.ok) return status;
    inputs->push_back(DeviceTensor(input.dims, input.dataType, device));
  }
  for (size_t i = 0; i < request.callerOutputs.size(); i++) {
    const GeOutputTensor &output = request.callerOutputs[i];
    NpuStatus status = Grow(&slot->outputDevice, i, output.bytes, true);
    if (!status.ok) return status;
    outputs->push_back(DeviceTensor(output.dims, output.dataType, slot->outputDevice[i].address));
  }
  return NpuStatus::Ok();
}

NpuStatus GeLoadedGraph::CopyBack(Slot *slot, const std::vector<gert::Tensor> &outputs, std::vector<GeResult> *results) {
  const AclApi &api = runtime_->api();
  for (size_t i = 0; i < outputs.size(); i++) {
    const gert::Tensor &tensor = outputs[i];
    size_t bytes = tensor.GetSize();
    NpuStatus status = Grow(&slot->outputHost, i, bytes, false);
    if (status.ok) {
      status = ACL_CALL(api, aclrtMemcpyAsync, (slot->outputHost[i].address, slot->outputHost[i].capacity,
                                                tensor.GetAddr(), bytes, ACL_MEMCPY_DEVICE_TO_HOST, slot->stream));
    }
    if (!status.ok) return status;
    GeResult result;
    const gert::Shape &shape = tensor.GetStorageShape();
    for (size_t d = 0; d < shape.GetDimNum(); d++) result.dims.push_back(shape.GetDim(d));
    result.bytes.size = bytes;
    results->push_back(std::move(result));
  }
  NpuStatus status = ACL_CALL(api, aclrtSynchronizeStream, (slot->stream));
  for (size_t i = 0; status.ok && i < results->size(); i++) {
    OutputBytes &bytes = (*results)[i].bytes;
    bytes.data.reset(new uint8_t[bytes.size]);
    std::memcpy(bytes.data.get(), slot->outputHost[i].address, bytes.size);
  }
  return status;
}

NpuStatus GeLoadedGraph::Execute(const GeExecuteRequest &request, std::vector<GeResult> *results) {
  if (!loaded()) return NpuStatus::Failure("the model has been unloaded");
  Slot &slot = slots_[request.slot];
  NpuStatus status = runtime_->MakeCurrent();
  if (!status.ok) return status;
  std::vector<gert::Tensor> inputs;
  // GE-allocated outputs are owned by their tensors (TensorData's manager) and freed when this
  // vector goes, after the copies back: the "clear" the GE backend does after each execution.
  std::vector<gert::Tensor> outputs;
  status = Stage(&slot, request, &inputs, &outputs);
  if (status.ok) {
    status = GeCheck(slot.session->ExecuteGraphWithStreamAsync(slot.graphId, slot.stream, inputs, outputs),
                     "ExecuteGraphWithStreamAsync");
  }
  // Always drain the stream: no copy may still be in flight once this returns.
  NpuStatus drained = ACL_CALL(runtime_->api(), aclrtSynchronizeStream, (slot.stream));
  if (status.ok) status = drained;
  if (status.ok) status = CopyBack(&slot, outputs, results);
  return status;
}

NpuStatus GeLoadedGraph::Release(Slot *slot) {
  const AclApi &api = runtime_->api();
  NpuStatus first;
  if (slot->graphAdded) KeepFirstFailure(&first, GeCheck(slot->session->RemoveGraph(slot->graphId), "RemoveGraph"));
  slot->graphAdded = false;
  slot->session.reset();
  if (slot->stream) KeepFirstFailure(&first, ACL_CALL(api, aclrtDestroyStream, (slot->stream)));
  slot->stream = nullptr;
  for (auto *buffers : {&slot->inputDevice, &slot->outputDevice}) {
    for (Buffer &buffer : *buffers) {
      if (buffer.address) KeepFirstFailure(&first, ACL_CALL(api, aclrtFree, (buffer.address)));
    }
    buffers->clear();
  }
  for (auto *buffers : {&slot->inputHost, &slot->outputHost}) {
    for (Buffer &buffer : *buffers) {
      if (buffer.address) KeepFirstFailure(&first, ACL_CALL(api, aclrtFreeHost, (buffer.address)));
    }
    buffers->clear();
  }
  return first;
}

NpuStatus GeLoadedGraph::Unload() {
  if (!runtime_) return NpuStatus::Ok();
  NpuStatus first = runtime_->MakeCurrent();
  for (Slot &slot : slots_) KeepFirstFailure(&first, Release(&slot));
  slots_.clear();
  if (geHeld_) KeepFirstFailure(&first, GeEnvironment::Release());
  geHeld_ = false;
  KeepFirstFailure(&first, runtime_->Release());
  runtime_.reset();
  return first;
}
