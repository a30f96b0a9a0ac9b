// An ONNX graph compiled and loaded by GE in N execution slots, each a (ge::Session, graph,
// stream) triple with its own device and pinned host buffers, as Huawei's Triton GE backend runs
// instance_exec_blocks (hicann/triton-inference-server-ge-backend src/model_instance_state.cpp).
// The call order is the documented one (hicann/ge 8.5.0 docs/graph_engine_api: LoadGraph.md,
// ExecuteGraphWithStreamAsync.md): Session -> aclgrphParseONNX -> AddGraph -> CompileGraph ->
// aclrtCreateStream -> LoadGraph(id, {}, stream) once, then per execution
// ExecuteGraphWithStreamAsync -> aclrtSynchronizeStream.
// Thread-safety: each slot is used by one execution at a time (GeModel refuses a busy slot);
// different slots run concurrently on libuv pool threads. Unload runs when no slot is busy.
#ifndef SERVE_FN_NPU_GE_LOADED_GRAPH_H
#define SERVE_FN_NPU_GE_LOADED_GRAPH_H

#include <memory>
#include <vector>

#include "device-runtime.h"
#include "ge-api.h"
#include "ge-options.h"
#include "loaded-model.h"

struct GeLoadRequest {
  ModelSource source;  // the ONNX model: aclgrphParseONNX(file) or aclgrphParseONNXFromMem(bytes)
  uint32_t slots = 1;
  StringOptions globalOptions;
  StringOptions sessionOptions;  // ge.session_device_id is added
  StringOptions graphOptions;
  StringOptions parserOptions;
};

// A tensor's dims, inline: at most gert::Shape's 25, so a request needs no allocation per tensor.
struct GeDims {
  uint32_t count = 0;
  int64_t values[gert::Shape::kMaxDimNum] = {};
};

struct GeInputTensor {
  const uint8_t *data = nullptr;
  size_t size = 0;
  GeDims dims;
  ge::DataType dataType = ge::DT_FLOAT;
};

struct GeOutputTensor {
  ge::DataType dataType = ge::DT_FLOAT;
  GeDims dims;
  size_t bytes = 0;  // what dims and dataType take, worked out once while the request is read
};

struct GeExecuteRequest {
  uint32_t slot = 0;
  std::vector<GeInputTensor> inputs;
  // With every output's dims the addon allocates them on the device; empty: GE allocates them.
  std::vector<GeOutputTensor> callerOutputs;
};

struct GeResult {
  OutputBytes bytes;
  std::vector<int64_t> dims;
};

class GeLoadedGraph {
 public:
  static NpuStatus Load(std::unique_ptr<DeviceRuntime> runtime, const GeLoadRequest &request,
                        std::unique_ptr<GeLoadedGraph> *out);

  ~GeLoadedGraph();
  GeLoadedGraph(const GeLoadedGraph &) = delete;
  GeLoadedGraph &operator=(const GeLoadedGraph &) = delete;

  uint32_t slotCount() const { return static_cast<uint32_t>(slots_.size()); }
  bool loaded() const { return runtime_ != nullptr; }

  NpuStatus Execute(const GeExecuteRequest &request, std::vector<GeResult> *results);
  // RemoveGraph, sessions, streams, buffers, the GE share (GEFinalize after the last), then the
  // runtime; reports the first failure but always releases everything. Idempotent.
  NpuStatus Unload();

 private:
  // Grown on need and reused by later executions of the same slot.
  struct Buffer {
    void *address = nullptr;
    size_t capacity = 0;
  };

  struct Slot {
    std::unique_ptr<ge::Session> session;
    uint32_t graphId = 0;
    bool graphAdded = false;
    aclrtStream stream = nullptr;
    std::vector<Buffer> inputDevice, inputHost, outputDevice, outputHost;
  };

  explicit GeLoadedGraph(std::unique_ptr<DeviceRuntime> runtime);
  NpuStatus LoadSlot(const GeLoadRequest &request, Slot *slot);
  NpuStatus Grow(std::vector<Buffer> *buffers, size_t index, size_t bytes, bool device);
  NpuStatus Stage(Slot *slot, const GeExecuteRequest &request, std::vector<gert::Tensor> *inputs,
                  std::vector<gert::Tensor> *outputs);
  NpuStatus CopyBack(Slot *slot, const std::vector<gert::Tensor> &outputs, std::vector<GeResult> *results);
  NpuStatus Release(Slot *slot);

  std::unique_ptr<DeviceRuntime> runtime_;
  bool geHeld_ = false;
  std::vector<Slot> slots_;
};

#endif
