/*
 * libge_runner.so's bridge to the simulated AscendCL it runs on (test/native/sim/acl-sim.h). Kept in
 * its own file because acl-sim.h and the GE headers both define ACL_ERROR_GE_* names.
 */
extern "C" {
#include "acl-sim.h"

/* AscendCL's public memory calls (CANN AscendCL API reference: aclrtMalloc, aclrtFree). */
aclError aclrtMalloc(void **devPtr, size_t size, int policy);
aclError aclrtFree(void *devPtr);
}

#include <cstdlib>

#include "ge-sim-runner.h"

namespace sim_ge {
bool AclInitialized() { return sim_internal_initialized() != 0; }

int32_t CurrentDevice() {
  const struct sim_context *context = sim_internal_current_context();
  return context ? context->device : -1;
}

int32_t CheckStream(const char *function, void *stream) { return sim_internal_check_stream(function, stream); }

size_t DeviceSpan(const void *address, int32_t device) { return sim_internal_device_span(address, device); }

/* ACL_MEM_MALLOC_HUGE_FIRST (0): the policy GE's own allocations use by default. */
int32_t DeviceMalloc(void **address, size_t size) { return aclrtMalloc(address, size, 0); }

int32_t DeviceFree(void *address) { return aclrtFree(address); }

uint32_t ExecuteDelayMs() {
  const char *value = getenv("GE_SIM_EXECUTE_DELAY_MS");
  return value ? static_cast<uint32_t>(strtoul(value, nullptr, 10)) : 0;
}
}  // namespace sim_ge
