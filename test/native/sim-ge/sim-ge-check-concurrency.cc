/*
 * sim-ge-check concurrency: one session per thread, as serve-fn's execution slots are, executing at
 * the same time (GE_SIM_EXECUTE_DELAY_MS, set by the test, keeps each execute inside the simulation
 * long enough to overlap). max_concurrent_executes counts across sessions; sim_reset_peaks clears it.
 */
#include <dlfcn.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "sim-ge-check.h"

namespace check {
namespace {
struct Gate {
  std::mutex lock;
  std::condition_variable changed;
  int waiting = 0;
  /* Returns once `parties` threads have arrived. */
  void Arrive(int parties) {
    std::unique_lock<std::mutex> guard(lock);
    if (++waiting == parties) changed.notify_all();
    changed.wait(guard, [&] { return waiting >= parties; });
  }
};

ge::Status Slot(const ge::Graph &graph, Gate &gate) {
  aclrtSetDevice(0);
  ge::Session session({});
  void *stream = nullptr;
  aclrtCreateStream(&stream);
  ge::Status status = session.AddGraph(1, graph);
  if (status == ge::SUCCESS) status = session.CompileGraph(1);
  if (status == ge::SUCCESS) status = session.LoadGraph(1, {}, stream);
  std::vector<float> x = DenseInput(1);
  DeviceTensor input(x.size() * sizeof(float), &x);
  std::vector<gert::Tensor> inputs, outputs;
  inputs.push_back(MakeTensor(input.address, {1, 3}));
  gate.Arrive(2);
  if (status == ge::SUCCESS) status = session.ExecuteGraphWithStreamAsync(1, stream, inputs, outputs);
  outputs.clear();
  aclrtDestroyStream(stream);
  return status;
}
}  // namespace

void RunConcurrency(const char *onnx) {
  aclInit(nullptr);
  aclrtSetDevice(0);
  ge::GEInitialize({});
  ge::Graph graph;
  ge::aclgrphParseONNX(onnx, {}, graph);
  Gate gate;
  ge::Status first = ge::FAILED, second = ge::FAILED;
  std::thread a([&] { first = Slot(graph, gate); });
  std::thread b([&] { second = Slot(graph, gate); });
  a.join();
  b.join();
  Print("slot-a", first);
  Print("slot-b", second);
  Print("executes", Counter("libge_runner.so", "executes"));
  Print("max-concurrent-executes", Counter("libge_runner.so", "max_concurrent_executes"));
  void *runner = dlopen("libge_runner.so", RTLD_NOW | RTLD_NOLOAD);
  auto reset = runner ? reinterpret_cast<void (*)()>(dlsym(runner, "sim_reset_peaks")) : nullptr;
  if (reset) reset();
  if (runner) dlclose(runner);
  Print("max-concurrent-executes-after-reset", Counter("libge_runner.so", "max_concurrent_executes"));
  Print("sessions-at-end", Counter("libge_runner.so", "sessions"));
  Print("finalize", ge::GEFinalize());
}
}  // namespace check
