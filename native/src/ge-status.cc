#include "ge-status.h"

#include "ge-api.h"

NpuStatus GeCheck(uint32_t status, const char *function) {
  if (status == ge::GRAPH_SUCCESS) return NpuStatus::Ok();
  NpuStatus result;
  result.ok = false;
  result.function = function;
  result.ge = true;
  result.geStatus = status;
  const char *text = ge::GEGetErrorMsgV2().GetString();
  result.message = text && *text ? text : "(GEGetErrorMsgV2 gave no text)";
  return result;
}
