#include "ge-status.h"

#include "ge-api.h"

NpuStatus GeCheck(uint32_t status, const char *function) {
  if (status == ge::GRAPH_SUCCESS) return NpuStatus::Ok();
  NpuStatus result;
  result.ok = false;
  result.function = function;
  result.ge = true;
  result.geStatus = status;
  // GE returns a fresh AscendString (hicann/ge 8.5.0 api/session/client/ge_api.cc): it must outlive
  // the copy of its text, so it is kept in a variable rather than used as a temporary.
  const ge::AscendString error = ge::GEGetErrorMsgV2();
  const char *text = error.GetString();
  result.message = text && *text ? text : "(GEGetErrorMsgV2 gave no text)";
  return result;
}
