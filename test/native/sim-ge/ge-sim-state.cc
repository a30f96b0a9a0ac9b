/*
 * libgraph.so: the state every simulated GE library shares (see ge-sim-internal.h).
 */
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ge-sim-internal.h"

/* GE_SIM_FAIL's default: GE's PARAM_INVALID, 1343225857 (GE_ERRORNO_COMMON value 1 in hicann/ge
 * 8.5.0 inc/graph_metadef/common/ge_common/ge_inner_error_codes.h). */
static const ge::Status kInjectedDefault = 1343225857U;

static std::atomic<int64_t> counters[SIM_GE_COUNTER_COUNT];
static const char *const counter_names[SIM_GE_COUNTER_COUNT] = {
    "ge_initialize_calls", "ge_finalize_calls", "sessions", "graphs_added", "graphs_compiled", "graphs_loaded",
    "load_graph_calls", "executes", "concurrent_executes", "max_concurrent_executes", "ge_allocated_outputs",
    "parse_calls", "build_calls", "lifecycle_errors", "concurrent_parses", "max_concurrent_parses",
    "build_environments",
};

/* GE keeps the error text per thread (GEGetErrorMsgV2 reports the calling thread's last failure). */
static thread_local char last_error[1024];

extern "C" {
ge::Status sim_ge_fail(ge::Status status, const char *function, const char *format, ...) {
  int prefix = snprintf(last_error, sizeof last_error, "[sim ge %u] %s: ", status, function);
  if (prefix < 0 || static_cast<size_t>(prefix) >= sizeof last_error) return status;
  va_list args;
  va_start(args, format);
  vsnprintf(last_error + prefix, sizeof last_error - static_cast<size_t>(prefix), format, args);
  va_end(args);
  return status;
}

ge::Status sim_ge_injected(const char *function) {
  const char *spec = getenv("GE_SIM_FAIL");
  if (!spec || !*spec) return ge::SUCCESS;
  const char *colon = strchr(spec, ':');
  size_t name_length = colon ? static_cast<size_t>(colon - spec) : strlen(spec);
  if (name_length != strlen(function) || strncmp(spec, function, name_length) != 0) return ge::SUCCESS;
  ge::Status status = kInjectedDefault;
  if (colon) {
    char *end = nullptr;
    unsigned long value = strtoul(colon + 1, &end, 10);
    if (end != colon + 1 && *end == '\0' && value != 0 && value <= 0xFFFFFFFFUL) status = static_cast<ge::Status>(value);
  }
  return sim_ge_fail(status, function, "injected failure");
}

void sim_ge_take_error(char *out, size_t out_len) {
  if (out_len == 0) return;
  snprintf(out, out_len, "%s", last_error);
  last_error[0] = '\0';
}

void sim_ge_count(enum sim_ge_counter_id id, int64_t delta) { counters[id].fetch_add(delta); }

void sim_ge_gauge(enum sim_ge_counter_id id, enum sim_ge_counter_id peak, int64_t delta) {
  int64_t now = counters[id].fetch_add(delta) + delta;
  int64_t seen = counters[peak].load();
  while (now > seen && !counters[peak].compare_exchange_weak(seen, now)) {
  }
}

int64_t sim_ge_counter(const char *name) {
  for (int i = 0; i < SIM_GE_COUNTER_COUNT; i++) {
    if (name && strcmp(name, counter_names[i]) == 0) return counters[i].load();
  }
  return -1;
}

void sim_ge_reset_peaks(void) {
  counters[SIM_GE_MAX_CONCURRENT_EXECUTES].store(0);
  counters[SIM_GE_MAX_CONCURRENT_PARSES].store(0);
}

void sim_ge_delay(const char *variable) {
  const char *value = getenv(variable);
  unsigned long ms = value ? strtoul(value, nullptr, 10) : 0;
  if (ms) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}
}
