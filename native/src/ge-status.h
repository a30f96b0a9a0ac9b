// GE calls' outcomes as NpuStatus, so GE failures travel the addon's one error path (ToJsError):
// the function, its status and GEGetErrorMsgV2's text (hicann/ge 8.5.0 inc/external/ge/ge_api.h).
#ifndef SERVE_FN_NPU_GE_STATUS_H
#define SERVE_FN_NPU_GE_STATUS_H

#include <cstdint>

#include "npu-status.h"

// Reads the GE error text at once, on the failing thread: GE keeps it per thread.
NpuStatus GeCheck(uint32_t status, const char *function);

#define GE_CALL(fn, args) GeCheck(ge::fn args, #fn)

#endif
