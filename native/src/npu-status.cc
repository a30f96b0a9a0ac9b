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

Napi::Error ToJsError(Napi::Env env, const NpuStatus &status) {
  if (status.function.empty()) return Napi::Error::New(env, status.message);
  if (status.ge) {
    Napi::Error error = Napi::Error::New(
        env, status.function + " failed with GE status " + std::to_string(status.geStatus) + ": " + status.message);
    error.Set("geFunction", Napi::String::New(env, status.function));
    error.Set("geStatus", Napi::Number::New(env, status.geStatus));
    error.Set("geMessage", Napi::String::New(env, status.message));
    return error;
  }
  Napi::Error error = Napi::Error::New(
      env, status.function + " failed with ACL error " + std::to_string(status.aclCode) + ": " + status.message);
  error.Set("aclFunction", Napi::String::New(env, status.function));
  error.Set("aclCode", Napi::Number::New(env, status.aclCode));
  error.Set("aclMessage", Napi::String::New(env, status.message));
  return error;
}
