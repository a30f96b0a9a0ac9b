/*
 * Simulated AscendCL: process init/finalize, the per-thread "recent error" text and the counters
 * that tests read through sim_counter(). Test-only; see README.md.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl-sim.h"

void sim_device_configure(void);

static atomic_int initialized;
static _Atomic int64_t counters[SIM_COUNTER_COUNT];

static const char *const counter_names[SIM_COUNTER_COUNT] = {
  [SIM_ACL_INIT_CALLS] = "acl_init_calls",
  [SIM_ACL_FINALIZE_CALLS] = "acl_finalize_calls",
  [SIM_DEVICE_ALLOCS] = "device_allocs",
  [SIM_DEVICE_BYTES] = "device_bytes",
  [SIM_HOST_ALLOCS] = "host_allocs",
  [SIM_CONTEXTS] = "contexts",
  [SIM_STREAMS] = "streams",
  [SIM_DEVICES_SET] = "devices_set",
  [SIM_CONTEXT_SWITCHES] = "context_switches",
  [SIM_MODELS_LOADED] = "models_loaded",
  [SIM_MODEL_DESCS] = "model_descs",
  [SIM_DATASETS] = "datasets",
  [SIM_DATA_BUFFERS] = "data_buffers",
  [SIM_EXECUTES] = "executes",
  [SIM_EXECUTE_NS] = "execute_ns",
  [SIM_MAX_CONCURRENT_EXECUTES] = "max_concurrent_executes",
  [SIM_MAX_CONCURRENT_EXECUTES_ALL] = "max_concurrent_executes_all",
  [SIM_LAST_BATCH_SIZE] = "last_batch_size",
  [SIM_ONNX_GRAPHS] = "onnx_graphs",
};

/* The real runtime keeps the text per thread and clears it once read (CANN AscendCL API reference). */
static __thread char pending_error[512];
static __thread int pending_error_set;
static __thread char returned_error[512];

aclError sim_internal_fail(aclError code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  int prefix = snprintf(pending_error, sizeof pending_error, "[sim %d] ", code);
  vsnprintf(pending_error + prefix, sizeof pending_error - (size_t)prefix, fmt, args);
  va_end(args);
  pending_error_set = 1;
  return code;
}

int sim_internal_initialized(void) { return atomic_load(&initialized); }

void sim_internal_count(enum sim_counter_id id, int64_t delta) { atomic_fetch_add(&counters[id], delta); }

void sim_internal_set(enum sim_counter_id id, int64_t value) { atomic_store(&counters[id], value); }

void sim_internal_peak(enum sim_counter_id id, int64_t value) {
  int64_t seen = atomic_load(&counters[id]);
  while (value > seen && !atomic_compare_exchange_weak(&counters[id], &seen, value)) {
  }
}

uint64_t sim_internal_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Read on every execute so a test can change it between calls. */
uint32_t sim_internal_execute_delay_ms(void) {
  const char *value = getenv("ACL_SIM_EXECUTE_DELAY_MS");
  return value ? (uint32_t)strtoul(value, NULL, 10) : 0;
}

SIM_API aclError aclInit(const char *configPath) {
  (void)configPath;
  sim_internal_count(SIM_ACL_INIT_CALLS, 1);
  int expected = 0;
  if (!atomic_compare_exchange_strong(&initialized, &expected, 1)) {
    return sim_internal_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  }
  sim_device_configure();
  return ACL_SUCCESS;
}

SIM_API aclError aclFinalize(void) {
  sim_internal_count(SIM_ACL_FINALIZE_CALLS, 1);
  int expected = 1;
  if (!atomic_compare_exchange_strong(&initialized, &expected, 0)) {
    return sim_internal_fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: not initialized");
  }
  return ACL_SUCCESS;
}

SIM_API const char *aclGetRecentErrMsg(void) {
  if (!pending_error_set) return NULL;
  memcpy(returned_error, pending_error, sizeof returned_error);
  pending_error_set = 0;
  return returned_error;
}

SIM_API aclError aclrtGetVersion(int32_t *major, int32_t *minor, int32_t *patch) {
  if (!major || !minor || !patch) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetVersion: NULL argument");
  *major = 1;
  *minor = 0;
  *patch = 0;
  return ACL_SUCCESS;
}

/* ---- Test-only exports ---- */

/* Current value of the named counter, or -1 when no counter has that name. */
SIM_API int64_t sim_counter(const char *name) {
  for (int i = 0; i < SIM_COUNTER_COUNT; i++) {
    if (name && strcmp(name, counter_names[i]) == 0) return atomic_load(&counters[i]);
  }
  return -1;
}

/* Peaks and last-value counters start again from zero, so a test measures only its own calls. */
SIM_API void sim_reset_peaks(void) {
  atomic_store(&counters[SIM_MAX_CONCURRENT_EXECUTES], 0);
  atomic_store(&counters[SIM_MAX_CONCURRENT_EXECUTES_ALL], 0);
  atomic_store(&counters[SIM_LAST_BATCH_SIZE], 0);
}
