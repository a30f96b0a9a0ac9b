/*
 * Shared by the parts of sim-ge-check, the test program that drives the simulated GE libraries
 * through their rules and prints one "name value" line per step (sim-ge.test.ts reads them).
 */
#ifndef SERVE_FN_SIM_GE_CHECK_H
#define SERVE_FN_SIM_GE_CHECK_H

#include <cstdio>
#include <string>
#include <vector>

#include "ge-sim-api.h"

/* AscendCL calls of the simulated libascendcl.so (CANN AscendCL API reference). */
extern "C" {
int aclInit(const char *configPath);
int aclFinalize(void);
int aclrtSetDevice(int32_t deviceId);
int aclrtResetDevice(int32_t deviceId);
int aclrtCreateStream(void **stream);
int aclrtDestroyStream(void *stream);
int aclrtMalloc(void **devPtr, size_t size, int policy);
int aclrtFree(void *devPtr);
int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind);
}
enum { ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2 };

namespace check {
using Options = std::map<ge::AscendString, ge::AscendString>;

void Print(const char *name, long long value);
void PrintValues(const char *name, const std::vector<float> &values);
/* A counter of the library file that exports sim_counter (libascendcl.so or libge_runner.so). */
long long Counter(const char *library, const char *name);
/* The calling thread's GEGetErrorMsgV2 text contains `part`. */
bool ErrorContains(const std::string &part);
std::vector<char> ReadFile(const char *path);

/* An FP32 input or output on the device: rows × columns, copied from `values` when given. */
struct DeviceTensor {
  void *address = nullptr;
  size_t bytes = 0;
  DeviceTensor(size_t bytes_, const std::vector<float> *values);
  ~DeviceTensor();
};
gert::Tensor MakeTensor(const void *address, std::vector<int64_t> dims, ge::DataType type = ge::DT_FLOAT);
std::vector<float> ReadBack(const gert::Tensor &tensor);
/* The test input of the dense graph: rows × 3 values. */
std::vector<float> DenseInput(int64_t rows);

/* sim-ge-check-build.cc: the aclgrph build calls. */
void RunBuild(const char *onnx, const char *output_dir);
/* sim-ge-check-concurrency.cc: two sessions executing at once on two threads. */
void RunConcurrency(const char *onnx);
}  // namespace check

#endif
