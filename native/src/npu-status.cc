#include "npu-status.h"

NpuStatus NpuStatus::Failure(std::string message) {
  NpuStatus status;
  status.ok = false;
  status.message = std::move(message);
  return status;
}

NpuStatus AclCheck(const AclApi &api, aclError code, const char *function) {
  if (code == ACL_SUCCESS) return NpuStatus::Ok();
  NpuStatus status;
  status.ok = false;
  status.function = function;
  status.aclCode = code;
  const char *recent = api.aclGetRecentErrMsg ? api.aclGetRecentErrMsg() : nullptr;
  status.message = recent && *recent ? recent : "(aclGetRecentErrMsg gave no text)";
  return status;
}

namespace {

// `<function> failed with <what> <code>: <message>`, carrying <prefix>Function, <prefix><codeName>
// and <prefix>Message for the TypeScript layer (npu-errors.ts).
Napi::Error FailedCall(Napi::Env env, const NpuStatus &status, const std::string &prefix, const char *codeName, const char *what,
                       double code) {
  Napi::Error error = Napi::Error::New(
      env, status.function + " failed with " + what + " " + std::to_string(static_cast<int64_t>(code)) + ": " + status.message);
  error.Set(prefix + "Function", Napi::String::New(env, status.function));
  error.Set(prefix + codeName, Napi::Number::New(env, code));
  error.Set(prefix + "Message", Napi::String::New(env, status.message));
  return error;
}

}  // namespace

Napi::Error ToJsError(Napi::Env env, const NpuStatus &status) {
  if (status.function.empty()) return Napi::Error::New(env, status.message);
  if (status.ge) return FailedCall(env, status, "ge", "Status", "GE status", status.geStatus);
  return FailedCall(env, status, "acl", "Code", "ACL error", status.aclCode);
}
