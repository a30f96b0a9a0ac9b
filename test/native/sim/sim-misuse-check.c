/*
 * Drives the simulated AscendCL directly through each misuse the serve-fn addon must avoid and
 * prints "<check> <value>" lines that test/native/sim-library.test.ts compares exactly. It proves
 * the simulation refuses those misuses, which is what makes the addon tests against it meaningful.
 *
 *   sim-misuse-check <add model with gears 1,4,8: a,b,sum [-1,4] FP32> <file that is not a model>
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl-sim.h"

aclError aclInit(const char *);
aclError aclFinalize(void);
const char *aclGetRecentErrMsg(void);
aclError aclrtSetDevice(int32_t);
aclError aclrtResetDevice(int32_t);
aclError aclrtCreateContext(aclrtContext *, int32_t);
aclError aclrtDestroyContext(aclrtContext);
aclError aclrtSetCurrentContext(aclrtContext);
aclError aclrtCreateStream(aclrtStream *);
aclError aclrtDestroyStream(aclrtStream);
aclError aclrtMalloc(void **, size_t, int);
aclError aclrtFree(void *);
aclError aclrtMemcpy(void *, size_t, const void *, size_t, int);
aclError aclmdlLoadFromFile(const char *, uint32_t *);
aclError aclmdlUnload(uint32_t);
struct aclmdlDataset *aclmdlCreateDataset(void);
aclError aclmdlDestroyDataset(const struct aclmdlDataset *);
aclError aclmdlAddDatasetBuffer(struct aclmdlDataset *, aclDataBuffer *);
aclDataBuffer *aclmdlGetDatasetBuffer(const struct aclmdlDataset *, size_t);
aclError aclUpdateDataBuffer(aclDataBuffer *, void *, size_t);
aclDataBuffer *aclCreateDataBuffer(void *, size_t);
aclError aclDestroyDataBuffer(const aclDataBuffer *);
aclError aclmdlExecute(uint32_t, const struct aclmdlDataset *, struct aclmdlDataset *);
aclError aclmdlExecuteAsync(uint32_t, const struct aclmdlDataset *, struct aclmdlDataset *, aclrtStream);
aclError aclmdlSetDynamicBatchSize(uint32_t, struct aclmdlDataset *, size_t, uint64_t);
int64_t sim_counter(const char *);
void sim_reset_peaks(void);

#define TENSOR_BYTES (8 * 4 * sizeof(float))

static uint32_t model_id;
static struct aclmdlDataset *inputs, *outputs;
static aclrtContext main_context;
static aclrtStream main_stream;
static void *device[4];

static void report(const char *check, long long value) { printf("%s %lld\n", check, value); }

static void *execute_on_other_thread(void *arg) {
  aclrtContext ctx = arg;
  if (ctx) aclrtSetCurrentContext(ctx);
  report(ctx ? "execute-from-other-context" : "execute-without-context", aclmdlExecute(model_id, inputs, outputs));
  return NULL;
}

static void *execute_slowly(void *rc) {
  aclrtSetCurrentContext(main_context);
  *(aclError *)rc = aclmdlExecuteAsync(model_id, inputs, outputs, main_stream);
  return NULL;
}

static void run_on_thread(void *(*fn)(void *), void *arg) {
  pthread_t thread;
  pthread_create(&thread, NULL, fn, arg);
  pthread_join(thread, NULL);
}

static void check_two_streams(void) {
  aclrtStream second;
  aclrtCreateStream(&second);
  setenv("ACL_SIM_EXECUTE_DELAY_MS", "150", 1);
  sim_reset_peaks();
  aclError first = -1;
  pthread_t thread;
  pthread_create(&thread, NULL, execute_slowly, &first);
  struct timespec pause = { 0, 1000000L };
  while (sim_counter("max_concurrent_executes") < 1) nanosleep(&pause, NULL);
  aclError second_rc = aclmdlExecuteAsync(model_id, inputs, outputs, second);
  pthread_join(thread, NULL);
  unsetenv("ACL_SIM_EXECUTE_DELAY_MS");
  report("first-stream-execute", first);
  report("second-stream-execute", second_rc);
  report("max-concurrent-executes", sim_counter("max_concurrent_executes"));
  aclrtDestroyStream(second);
}

static void check_buffers(void) {
  struct aclmdlDataset *small = aclmdlCreateDataset();
  void *host = malloc(TENSOR_BYTES);
  aclmdlAddDatasetBuffer(small, aclCreateDataBuffer(device[0], 16));
  aclmdlAddDatasetBuffer(small, aclCreateDataBuffer(host, TENSOR_BYTES));
  aclmdlAddDatasetBuffer(small, aclCreateDataBuffer(device[3], 8));
  report("set-gear-on-small-dataset", aclmdlSetDynamicBatchSize(model_id, small, 2, 8));
  report("input-buffer-too-small", aclmdlExecute(model_id, small, outputs));
  aclUpdateDataBuffer(aclmdlGetDatasetBuffer(small, 0), device[0], TENSOR_BYTES);
  report("host-memory-as-input", aclmdlExecute(model_id, small, outputs));
  report("copy-beyond-allocation", aclrtMemcpy(device[0], 2 * TENSOR_BYTES, host, 2 * TENSOR_BYTES, ACL_MEMCPY_HOST_TO_DEVICE));
  for (size_t i = 0; i < 3; i++) aclDestroyDataBuffer(aclmdlGetDatasetBuffer(small, i));
  aclmdlDestroyDataset(small);
  free(host);
}

static void check_execute(void) {
  float a[32], b[32], sum[32];
  uint64_t no_gear = 0;
  for (int i = 0; i < 32; i++) a[i] = (float)i, b[i] = 0.5f;
  aclrtMemcpy(device[3], 8, &no_gear, sizeof no_gear, ACL_MEMCPY_HOST_TO_DEVICE);
  aclrtMemcpy(device[0], TENSOR_BYTES, a, sizeof a, ACL_MEMCPY_HOST_TO_DEVICE);
  aclrtMemcpy(device[1], TENSOR_BYTES, b, sizeof b, ACL_MEMCPY_HOST_TO_DEVICE);
  report("execute-without-gear", aclmdlExecute(model_id, inputs, outputs));
  report("set-gear-3", aclmdlSetDynamicBatchSize(model_id, inputs, 2, 3));
  report("set-gear-on-wrong-index", aclmdlSetDynamicBatchSize(model_id, inputs, 0, 4));
  report("set-gear-4", aclmdlSetDynamicBatchSize(model_id, inputs, 2, 4));
  report("execute-wrong-model-id", aclmdlExecute(model_id + 100, inputs, outputs));
  report("execute", aclmdlExecute(model_id, inputs, outputs));
  aclrtMemcpy(sum, sizeof sum, device[2], TENSOR_BYTES, ACL_MEMCPY_DEVICE_TO_HOST);
  report("sum-row-3-col-3-times-2", (long long)(sum[15] * 2));
  report("last-batch-size", sim_counter("last_batch_size"));
  run_on_thread(execute_on_other_thread, NULL);
  aclrtContext other;
  aclrtCreateContext(&other, 1);
  aclrtStream other_stream;
  aclrtCreateStream(&other_stream);
  run_on_thread(execute_on_other_thread, other);
  aclrtSetCurrentContext(main_context);
  report("execute-on-stream-of-other-context", aclmdlExecuteAsync(model_id, inputs, outputs, other_stream));
  report("destroy-context-with-open-stream", aclrtDestroyContext(other));
  aclrtSetCurrentContext(other);
  report("unload-from-other-context", aclmdlUnload(model_id));
  aclrtDestroyStream(other_stream);
  aclrtDestroyContext(other);
  aclrtSetCurrentContext(main_context);
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  void *scratch;
  report("malloc-before-init", aclrtMalloc(&scratch, 64, 0));
  report("init", aclInit(NULL));
  report("init-again", aclInit(NULL));
  report("malloc-without-context", aclrtMalloc(&scratch, 64, 0));
  const char *message = aclGetRecentErrMsg();
  report("recent-error-names-the-cause", message && strstr(message, "no context is current") != NULL);
  report("recent-error-cleared-after-read", aclGetRecentErrMsg() == NULL);
  report("set-missing-device", aclrtSetDevice(9));
  report("set-device", aclrtSetDevice(0));
  report("create-context", aclrtCreateContext(&main_context, 0));
  report("create-stream", aclrtCreateStream(&main_stream));
  report("load-missing-file", aclmdlLoadFromFile("/nonexistent/model.om", &model_id));
  report("load-not-a-model", aclmdlLoadFromFile(argv[2], &model_id));
  report("load", aclmdlLoadFromFile(argv[1], &model_id));
  inputs = aclmdlCreateDataset();
  outputs = aclmdlCreateDataset();
  size_t sizes[4] = { TENSOR_BYTES, TENSOR_BYTES, TENSOR_BYTES, 8 };
  for (int i = 0; i < 4; i++) aclrtMalloc(&device[i], sizes[i], 0);
  aclmdlAddDatasetBuffer(inputs, aclCreateDataBuffer(device[0], TENSOR_BYTES));
  aclmdlAddDatasetBuffer(inputs, aclCreateDataBuffer(device[1], TENSOR_BYTES));
  aclmdlAddDatasetBuffer(inputs, aclCreateDataBuffer(device[3], 8));
  aclmdlAddDatasetBuffer(outputs, aclCreateDataBuffer(device[2], TENSOR_BYTES));
  check_execute();
  check_buffers();
  check_two_streams();
  for (size_t i = 0; i < 3; i++) aclDestroyDataBuffer(aclmdlGetDatasetBuffer(inputs, i));
  aclDestroyDataBuffer(aclmdlGetDatasetBuffer(outputs, 0));
  aclmdlDestroyDataset(inputs);
  aclmdlDestroyDataset(outputs);
  for (int i = 0; i < 4; i++) aclrtFree(device[i]);
  report("unload", aclmdlUnload(model_id));
  report("unload-again", aclmdlUnload(model_id));
  aclrtDestroyStream(main_stream);
  aclrtDestroyContext(main_context);
  aclrtResetDevice(0);
  const char *names[] = { "device_allocs", "device_bytes", "host_allocs", "contexts", "streams", "devices_set",
                          "models_loaded", "datasets", "data_buffers" };
  long long outstanding = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) outstanding += sim_counter(names[i]);
  report("outstanding-after-cleanup", outstanding);
  report("finalize", aclFinalize());
  report("finalize-again", aclFinalize());
  return 0;
}
