// Outcome of a native step: success, an ACL call that failed (function, code and the runtime's
// own text from aclGetRecentErrMsg), a GE call that failed (function, GE status and
// GEGetErrorMsgV2's text; only the GE build fills those, see ge-status.h), or a failure of the
// addon itself. Worker threads fill it;
// the JS thread turns it into an Error that the TypeScript layer maps to SF_ERR_NPU_ACL.
#ifndef SERVE_FN_NPU_STATUS_H
#define SERVE_FN_NPU_STATUS_H

#include <napi.h>

#include <string>
#include <utility>

#include "acl-api.h"

struct NpuStatus {
  bool ok = true;
  std::string function;  // failing AscendCL or GE function; empty when the addon itself failed
  aclError aclCode = ACL_SUCCESS;
  bool ge = false;         // function is a GE call and geStatus its status
  uint32_t geStatus = 0;
  std::string message;

  static NpuStatus Ok() { return NpuStatus(); }
  static NpuStatus Failure(std::string message);
};

// Checks an AscendCL return code. The error text is read at once, on the failing thread, because
// the runtime keeps it per thread and clears it when read.
NpuStatus AclCheck(const AclApi &api, aclError code, const char *function);

#define ACL_CALL(api, fn, args) AclCheck((api), (api).fn args, #fn)

// For teardowns that go on past a failed step, so that everything is still released: *first
// keeps the earliest failure, the one the caller reports.
inline void KeepFirstFailure(NpuStatus *first, NpuStatus status) {
  if (first->ok && !status.ok) *first = std::move(status);
}

// An Error carrying aclFunction, aclCode and aclMessage for ACL failures, and geFunction, geStatus
// and geMessage for GE failures.
Napi::Error ToJsError(Napi::Env env, const NpuStatus &status);

#endif
