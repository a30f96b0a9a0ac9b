/*
 * sim-ge-check: drives the simulated GE libraries as serve-fn's addon does, and through each misuse
 * the simulation must refuse. Modes:
 *   lifecycle <dense.onnx> <not-onnx-file>   the documented call order, misuse, counters, results
 *   flow <dense.onnx>                        the plain happy path, one status per call (for GE_SIM_FAIL)
 *   build <dense.onnx> <output-dir>          aclgrphBuildInitialize … aclgrphSaveModel
 *   concurrency <dense.onnx>                 two sessions executing at the same time
 * The dense graph is x [batch, 3] → y [batch, 2] (sim-ge.test.ts writes it).
 */
#include "sim-ge-check.h"

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace check {
void Print(const char *name, long long value) { printf("%s %lld\n", name, value); }

void PrintValues(const char *name, const std::vector<float> &values) {
  printf("%s ", name);
  for (size_t i = 0; i < values.size(); i++) printf("%s%.9g", i ? "," : "", values[i]);
  printf("\n");
}

long long Counter(const char *library, const char *name) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  auto counter = handle ? reinterpret_cast<int64_t (*)(const char *)>(dlsym(handle, "sim_counter")) : nullptr;
  long long value = counter ? counter(name) : -2;
  if (handle) dlclose(handle);
  return value;
}

bool ErrorContains(const std::string &part) { return std::string(ge::GEGetErrorMsgV2().GetString()).find(part) != std::string::npos; }

std::vector<char> ReadFile(const char *path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

DeviceTensor::DeviceTensor(size_t bytes_, const std::vector<float> *values) : bytes(bytes_) {
  aclrtMalloc(&address, bytes, 0);
  if (values) aclrtMemcpy(address, bytes, values->data(), values->size() * sizeof(float), ACL_MEMCPY_HOST_TO_DEVICE);
}

DeviceTensor::~DeviceTensor() { aclrtFree(address); }

gert::Tensor MakeTensor(const void *address, std::vector<int64_t> dims, ge::DataType type) {
  gert::StorageShape shape;
  for (gert::Shape *part : {&shape.MutableOriginShape(), &shape.MutableStorageShape()}) {
    part->SetDimNum(dims.size());
    for (size_t d = 0; d < dims.size(); d++) part->SetDim(d, dims[d]);
  }
  return gert::Tensor(shape, gert::StorageFormat(), gert::kOnDeviceHbm, type, const_cast<void *>(address), nullptr);
}

std::vector<float> ReadBack(const gert::Tensor &tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.GetShapeSize()));
  aclrtMemcpy(values.data(), values.size() * sizeof(float), tensor.GetAddr(), values.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  return values;
}

/* Values with more bits than binary16 keeps, so fp16 compute shows in the results. */
std::vector<float> DenseInput(int64_t rows) {
  std::vector<float> values;
  for (int64_t i = 0; i < rows * 3; i++) values.push_back(static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.3) * 1.37));
  return values;
}
}  // namespace check

using namespace check;

namespace {
const char *const kAcl = "libascendcl.so";
const char *const kGe = "libge_runner.so";

/* The whole documented order with each misuse in between (ge-sim README's table). */
void RunLifecycle(const char *onnx, const char *not_onnx) {
  Print("ge-initialize-before-acl-init", ge::GEInitialize({}));
  {
    ge::Session early({});
    Print("session-before-ge-initialize-refused", early.GetSessionId() == 0 && ErrorContains("[sim ge 145001] Session: GEInitialize has not been called"));
    Print("add-graph-on-refused-session", early.AddGraph(1, ge::Graph()));
  }
  Print("acl-init", aclInit(nullptr));
  Print("ge-initialize-without-device", ge::GEInitialize({}));
  Print("set-device", aclrtSetDevice(0));
  Print("ge-initialize-unsimulated-precision", ge::GEInitialize({{"ge.exec.precision_mode", "allow_mix_precision"}}));
  Print("ge-initialize", ge::GEInitialize({{"ge.exec.deviceId", "0"}, {"ge.socVersion", "Ascend910B1"}, {"ge.exec.precision_mode_v2", "origin"}}));
  Print("ge-initialize-again", ge::GEInitialize({}));
  Print("ge-initialize-again-says-why", ErrorContains("GEInitialize: GE is already initialized"));
  Print("ge-initialize-calls", Counter(kGe, "ge_initialize_calls"));

  ge::Graph graph;
  Print("parse-missing-file", ge::aclgrphParseONNX("/nonexistent/model.onnx", {}, graph));
  Print("parse-not-onnx", ge::aclgrphParseONNX(not_onnx, {}, graph));
  Print("parse-unsimulated-option", ge::aclgrphParseONNX(onnx, {{"input_format", "NCHW"}}, graph));
  Print("parse-shape-unknown-input", ge::aclgrphParseONNX(onnx, {{"input_shape", "nope:1,3"}}, graph));
  Print("parse-shape-against-fixed-dim", ge::aclgrphParseONNX(onnx, {{"input_shape", "x:-1,4"}}, graph));
  Print("parse", ge::aclgrphParseONNX(onnx, {{"input_shape", "x:1~8,3"}}, graph));
  std::vector<char> bytes = ReadFile(onnx);
  ge::Graph from_memory("from-memory");
  Print("parse-from-memory", ge::aclgrphParseONNXFromMem(bytes.data(), bytes.size(), {}, from_memory));
  Print("parse-calls", Counter(kGe, "parse_calls"));

  ge::Session session({});
  void *stream = nullptr, *other_stream = nullptr;
  aclrtCreateStream(&stream);
  aclrtCreateStream(&other_stream);
  Print("sessions", Counter(kGe, "sessions"));
  Print("add-unparsed-graph", session.AddGraph(1, ge::Graph("empty")));
  Print("add-dynamic-dims-without-input-shape", session.AddGraph(1, graph, {{"ge.dynamicDims", "1;4;8"}}));
  Print("add-gear-of-wrong-arity", session.AddGraph(1, graph, {{"ge.inputShape", "x:-1,3"}, {"ge.dynamicDims", "1,2;4,4"}}));
  Print("add-graph", session.AddGraph(1, graph, {{"ge.inputShape", "x:-1,3"}, {"ge.dynamicDims", "1;4;8"}, {"ge.dynamicNodeType", "1"}}));
  Print("add-same-graph-id", session.AddGraph(1, graph));
  Print("add-static-copy", session.AddGraphWithCopy(2, from_memory, {{"ge.inputShape", "x:2,3"}}));
  Print("graphs-added", Counter(kGe, "graphs_added"));
  Print("load-before-compile", session.LoadGraph(1, {}, stream));
  Print("compile-unknown-graph", session.CompileGraph(9));
  Print("compile", session.CompileGraph(1));
  Print("compile-static", session.CompileGraph(2));
  Print("graphs-compiled", Counter(kGe, "graphs_compiled"));

  std::vector<float> x4 = DenseInput(4);
  DeviceTensor input(x4.size() * sizeof(float), &x4);
  std::vector<gert::Tensor> inputs;
  inputs.push_back(MakeTensor(input.address, {4, 3}));
  std::vector<gert::Tensor> outputs;
  Print("execute-before-load", session.ExecuteGraphWithStreamAsync(1, stream, inputs, outputs));
  Print("load", GeSessionLoadGraph(session, 1, {}, stream));
  Print("load-again", session.LoadGraph(1, {}, stream));
  Print("load-static", session.LoadGraph(2, {}, stream));
  Print("load-graph-calls", Counter(kGe, "load_graph_calls"));
  Print("graphs-loaded", Counter(kGe, "graphs_loaded"));

  std::vector<gert::Tensor> bad;
  std::vector<float> host(12);
  bad.push_back(MakeTensor(host.data(), {4, 3}));
  Print("execute-host-memory-input", session.ExecuteGraphWithStreamAsync(1, stream, bad, outputs));
  DeviceTensor small(8, nullptr);
  bad.clear();
  bad.push_back(MakeTensor(small.address, {4, 3}));
  Print("execute-allocation-too-small", session.ExecuteGraphWithStreamAsync(1, stream, bad, outputs));
  bad.clear();
  bad.push_back(MakeTensor(input.address, {3, 3}));
  Print("execute-batch-not-a-gear", session.ExecuteGraphWithStreamAsync(1, stream, bad, outputs));
  Print("execute-batch-not-a-gear-says-why", ErrorContains("the dynamic dims (3) are not one of the ge.dynamicDims gears"));
  bad.clear();
  bad.push_back(MakeTensor(input.address, {4, 3}, ge::DT_INT32));
  Print("execute-wrong-data-type", session.ExecuteGraphWithStreamAsync(1, stream, bad, outputs));
  bad.clear();
  Print("execute-no-inputs", session.ExecuteGraphWithStreamAsync(1, stream, bad, outputs));
  Print("execute-on-other-stream", session.ExecuteGraphWithStreamAsync(1, other_stream, inputs, outputs));
  Print("execute-static-other-shape", session.ExecuteGraphWithStreamAsync(2, stream, inputs, outputs));
  Print("executes-after-refusals", Counter(kGe, "executes"));

  long long device_allocs = Counter(kAcl, "device_allocs");
  Print("execute-ge-outputs", GeSessionExecuteGraphWithStreamAsync(session, 1, stream, inputs, outputs));
  Print("ge-output-count", static_cast<long long>(outputs.size()));
  Print("ge-output-dim-0", outputs.empty() ? -1 : outputs[0].GetStorageShape().GetDim(0));
  Print("ge-output-dim-1", outputs.empty() ? -1 : outputs[0].GetStorageShape().GetDim(1));
  Print("ge-allocated-outputs", Counter(kGe, "ge_allocated_outputs"));
  Print("ge-outputs-in-device-memory", Counter(kAcl, "device_allocs") - device_allocs);
  PrintValues("input-values", x4);
  std::vector<float> ge_values = outputs.empty() ? std::vector<float>() : ReadBack(outputs[0]);
  PrintValues("output-values", ge_values);
  outputs.clear();
  Print("ge-allocated-outputs-after-clear", Counter(kGe, "ge_allocated_outputs"));
  Print("device-allocs-after-clear", Counter(kAcl, "device_allocs") - device_allocs);

  DeviceTensor out(4 * 2 * sizeof(float), nullptr);
  outputs.push_back(MakeTensor(out.address, {4, 2}));
  Print("execute-caller-outputs", session.ExecuteGraphWithStreamAsync(1, stream, inputs, outputs));
  Print("caller-outputs-equal-ge-outputs", ReadBack(outputs[0]) == ge_values);
  DeviceTensor out_small(4, nullptr);
  std::vector<gert::Tensor> small_outputs;
  small_outputs.push_back(MakeTensor(out_small.address, {4, 2}));
  Print("execute-caller-output-too-small", session.ExecuteGraphWithStreamAsync(1, stream, inputs, small_outputs));
  Print("executes", Counter(kGe, "executes"));

  {
    ge::Session both(Options{{"ge.exec.precision_mode", "force_fp16"}, {"ge.exec.precision_mode_v2", "fp16"}});
    Print("session-both-precisions-refused", both.GetSessionId() == 0 && ErrorContains("are both set"));
  }
  {
    ge::Session fp16(Options{{"ge.exec.precision_mode", "force_fp16"}});
    fp16.AddGraph(1, graph);
    fp16.CompileGraph(1);
    fp16.LoadGraph(1, {}, stream);
    std::vector<gert::Tensor> fp16_outputs;
    Print("execute-fp16-session", fp16.ExecuteGraphWithStreamAsync(1, stream, inputs, fp16_outputs));
    std::vector<float> fp16_values = fp16_outputs.empty() ? std::vector<float>() : ReadBack(fp16_outputs[0]);
    PrintValues("fp16-output-values", fp16_values);
    Print("add-graph-unsimulated-precision", session.AddGraph(3, graph, {{"ge.exec.precision_mode_v2", "mixed_float16"}}));
    Print("add-graph-fp16", session.AddGraph(3, graph, {{"ge.exec.precision_mode_v2", "fp16"}}));
    session.CompileGraph(3);
    session.LoadGraph(3, {}, stream);
    std::vector<gert::Tensor> graph_fp16_outputs;
    session.ExecuteGraphWithStreamAsync(3, stream, inputs, graph_fp16_outputs);
    Print("graph-fp16-in-origin-session-equals-fp16-session",
          !graph_fp16_outputs.empty() && ReadBack(graph_fp16_outputs[0]) == fp16_values);
    Print("remove-fp16-graph", session.RemoveGraph(3));
  }

  {
    ge::Session bad_device(Options{{"ge.session_device_id", "one"}});
    Print("session-bad-device-id-refused", bad_device.GetSessionId() == 0 && ErrorContains("ge.session_device_id 'one' is not a device id"));
    ge::Session on_one(Options{{"ge.session_device_id", "1"}});
    on_one.AddGraph(1, graph);
    on_one.CompileGraph(1);
    Print("load-from-thread-on-other-device", on_one.LoadGraph(1, {}, stream));
    aclrtSetDevice(1);
    void *stream_one = nullptr;
    aclrtCreateStream(&stream_one);
    Print("load-on-session-device", on_one.LoadGraph(1, {}, stream_one));
    std::vector<gert::Tensor> one_outputs;
    Print("execute-input-on-other-device", on_one.ExecuteGraphWithStreamAsync(1, stream_one, inputs, one_outputs));
    aclrtDestroyStream(stream_one);
    aclrtSetDevice(0);
  }
  Print("remove-unknown-graph", session.RemoveGraph(7));
  Print("remove-graph", session.RemoveGraph(2));
  Print("graphs-added-after-remove", Counter(kGe, "graphs_added"));
  Print("graphs-compiled-after-remove", Counter(kGe, "graphs_compiled"));
  Print("graphs-loaded-after-remove", Counter(kGe, "graphs_loaded"));
  {
    ge::Session leaky({});
    leaky.AddGraph(1, graph);
    leaky.CompileGraph(1);
    leaky.LoadGraph(1, {}, stream);
    outputs.clear();
    leaky.ExecuteGraphWithStreamAsync(1, stream, inputs, outputs);
  }
  Print("lifecycle-errors-after-outputs-outlive-session", Counter(kGe, "lifecycle_errors"));
  Print("outputs-outlive-session-says-why", ErrorContains("~Session: 1 outputs GE allocated for this Session are still alive"));
  outputs.clear();
  Print("ge-allocated-outputs-at-end", Counter(kGe, "ge_allocated_outputs"));

  ge::Session *late = new ge::Session({});
  Print("finalize-with-sessions-alive", ge::GEFinalize());
  Print("finalize-with-sessions-alive-says-why", ErrorContains("2 sessions are still alive"));
  Print("compile-after-finalize", session.CompileGraph(1));
  delete late;
  Print("lifecycle-errors-after-session-outlives-finalize", Counter(kGe, "lifecycle_errors"));
  Print("finalize-again", ge::GEFinalize());
  Print("ge-finalize-calls", Counter(kGe, "ge_finalize_calls"));
  Print("ge-initialize-after-finalize", ge::GEInitialize({}));
  Print("old-session-after-reinitialize", session.AddGraph(5, graph));
  Print("finalize-with-stale-session", ge::GEFinalize());
  aclrtDestroyStream(other_stream);
  aclrtDestroyStream(stream);
}

/* The happy path only, each status printed: GE_SIM_FAIL makes exactly one of them fail. */
void RunFlow(const char *onnx) {
  std::string first_error;
  auto step = [&first_error](const char *name, ge::Status status) {
    Print(name, status);
    if (status != ge::SUCCESS && first_error.empty()) first_error = ge::GEGetErrorMsgV2().GetString();
  };
  aclInit(nullptr);
  aclrtSetDevice(0);
  step("GEInitialize", ge::GEInitialize({}));
  ge::Graph graph;
  step("aclgrphParseONNX", ge::aclgrphParseONNX(onnx, {}, graph));
  {
    ge::Session session({});
    if (session.GetSessionId() == 0 && first_error.empty()) first_error = ge::GEGetErrorMsgV2().GetString();
    void *stream = nullptr;
    aclrtCreateStream(&stream);
    step("AddGraph", session.AddGraph(1, graph));
    step("CompileGraph", session.CompileGraph(1));
    step("LoadGraph", session.LoadGraph(1, {}, stream));
    std::vector<float> x = DenseInput(2);
    DeviceTensor input(x.size() * sizeof(float), &x);
    std::vector<gert::Tensor> inputs, outputs;
    inputs.push_back(MakeTensor(input.address, {2, 3}));
    step("ExecuteGraphWithStreamAsync", session.ExecuteGraphWithStreamAsync(1, stream, inputs, outputs));
    outputs.clear();
    step("RemoveGraph", session.RemoveGraph(1));
    aclrtDestroyStream(stream);
  }
  step("GEFinalize", ge::GEFinalize());
  printf("first-error %s\n", first_error.c_str());
}
}  // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "lifecycle" && argc == 4) {
    RunLifecycle(argv[2], argv[3]);
  } else if (mode == "flow" && argc == 3) {
    RunFlow(argv[2]);
  } else if (mode == "build" && argc == 4) {
    RunBuild(argv[2], argv[3]);
  } else if (mode == "concurrency" && argc == 3) {
    RunConcurrency(argv[2]);
  } else {
    fprintf(stderr, "usage: sim-ge-check lifecycle|flow|build|concurrency <dense.onnx> [<not-onnx>|<output-dir>]\n");
    return 2;
  }
  return 0;
}
