/*
 * Simulated AscendCL: writer of model format 2 (README.md), an OM around an ONNX graph, for the
 * simulated GE compiler (aclgrphBuildModel/aclgrphSaveModel). It checks the format, not the graph:
 * loading the OM opens the graph and reports what is wrong with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-onnx.h"
#include "acl-sim.h"

static void put_u32(uint8_t *at, uint32_t value) { memcpy(at, &value, 4); }

SIM_API int sim_om_encode_onnx(const void *onnx, size_t onnx_size, const uint64_t *gears, uint32_t gear_count, int fp16_compute,
                               uint8_t **out, size_t *out_size, char *err, size_t err_len) {
  if (!out || !out_size) {
    snprintf(err, err_len, "sim_om_encode_onnx: out or out_size is NULL");
    return -1;
  }
  *out = NULL;
  *out_size = 0;
  if (!onnx || onnx_size == 0 || onnx_size > UINT32_MAX) {
    snprintf(err, err_len, "sim_om_encode_onnx: the ONNX graph must be 1 byte to 4 GiB, got %zu bytes", onnx ? onnx_size : 0);
    return -1;
  }
  if (gear_count > SIM_MAX_GEARS || (gear_count && !gears)) {
    snprintf(err, err_len, "sim_om_encode_onnx: %u batch gears (at most %d)", gear_count, SIM_MAX_GEARS);
    return -1;
  }
  for (uint32_t i = 0; i < gear_count; i++) {
    if (gears[i] == 0 || (i > 0 && gears[i] <= gears[i - 1])) {
      snprintf(err, err_len, "sim_om_encode_onnx: batch gears must be positive and increasing");
      return -1;
    }
  }
  size_t size = SIM_OM_HEADER_SIZE + 8u * gear_count + onnx_size;
  uint8_t *image = calloc(1, size);
  memcpy(image, SIM_OM_MAGIC, 8);
  put_u32(image + 8, SIM_OM_VERSION_ONNX);
  put_u32(image + 12, SIM_OP_ONNX);
  put_u32(image + 16, fp16_compute ? SIM_OM_FLAG_FP16_COMPUTE : 0);
  put_u32(image + 24, gear_count);
  put_u32(image + 28, (uint32_t)onnx_size);
  if (gear_count) memcpy(image + SIM_OM_HEADER_SIZE, gears, 8u * gear_count);
  memcpy(image + SIM_OM_HEADER_SIZE + 8u * gear_count, onnx, onnx_size);
  *out = image;
  *out_size = size;
  return 0;
}
