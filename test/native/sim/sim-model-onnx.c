/*
 * Simulated AscendCL: models of format 2 (README.md), an OM around an ONNX graph, as the simulated
 * GE compiler writes them. Loading opens the graph in the ONNX runner (sim-onnx.h), whose inputs and
 * outputs become the model's tensors; an execute runs the graph at the gear's batch.
 */
#include <stdio.h>
#include <string.h>

#include "acl-sim.h"
#include "sim-onnx.h"

/* A runner tensor as a model tensor: with gears dim 0 must be symbolic (the batch), all other dims fixed. */
static int to_model_tensor(const struct sim_onnx_tensor_info *info, const char *kind, uint32_t gear_count, struct sim_tensor *t, char *err,
                           size_t err_len) {
  if (gear_count && info->dim_count == 0) {
    snprintf(err, err_len, "%s '%s' is a scalar; batch gears need a batch dim 0", kind, info->name);
    return 0;
  }
  for (uint32_t d = 0; d < info->dim_count; d++) {
    if (gear_count && d == 0 ? info->dims[0] != -1 : info->dims[d] < 1) {
      snprintf(err, err_len, "%s '%s' dim %u is %lld: with batch gears dim 0 must be symbolic, and every other dim fixed and positive",
               kind, info->name, d, (long long)info->dims[d]);
      return 0;
    }
  }
  memcpy(t->name, info->name, SIM_NAME_LEN);
  t->dtype = info->dtype;
  t->dim_count = info->dim_count;
  memcpy(t->dims, info->dims, 8u * info->dim_count);
  return 1;
}

int sim_internal_parse_onnx_model(const uint32_t *header, const uint8_t *body, size_t body_size, struct sim_model_def *def, char *err,
                                  size_t err_len) {
  uint32_t flags = header[2], reserved = header[3], onnx_size = header[5];
  if (def->op != SIM_OP_ONNX) {
    snprintf(err, err_len, "format version 2 carries op 5 (onnx), not op %u", def->op);
    return 0;
  }
  if ((flags & ~SIM_OM_FLAG_FP16_COMPUTE) != 0 || reserved != 0) {
    snprintf(err, err_len, "unknown flags 0x%x or reserved word 0x%x (must be 0) in a version 2 header", flags, reserved);
    return 0;
  }
  if (body_size != onnx_size) {
    snprintf(err, err_len, "expected %u ONNX bytes after the gears, found %zu", onnx_size, body_size);
    return 0;
  }
  if (sim_onnx_open(body, body_size, (flags & SIM_OM_FLAG_FP16_COMPUTE) != 0, &def->onnx, err, err_len) != 0) return 0;
  def->input_count = sim_onnx_input_count(def->onnx);
  def->output_count = sim_onnx_output_count(def->onnx);
  if (def->input_count > SIM_MAX_INPUTS || def->output_count < 1) {
    snprintf(err, err_len, "the graph has %u inputs and %u outputs (0..%d inputs and at least 1 output)", def->input_count,
             def->output_count, SIM_MAX_INPUTS);
    return 0;
  }
  for (uint32_t i = 0; i < def->input_count; i++) {
    struct sim_onnx_tensor_info info;
    sim_onnx_input_info(def->onnx, i, &info);
    if (!to_model_tensor(&info, "input", def->gear_count, &def->inputs[i], err, err_len)) return 0;
  }
  for (uint32_t i = 0; i < def->output_count; i++) {
    struct sim_onnx_tensor_info info;
    sim_onnx_output_info(def->onnx, i, &info);
    if (!to_model_tensor(&info, "output", def->gear_count, &def->outputs[i], err, err_len)) return 0;
  }
  return 1;
}

aclError sim_internal_run_onnx(const char *fn, const struct sim_model_def *def, uint64_t batch, void *const *inputs, void *const *outputs) {
  uint32_t dim_counts[SIM_ONNX_MAX_IO];
  int64_t dims[SIM_ONNX_MAX_IO][SIM_ONNX_MAX_DIMS];
  for (uint32_t i = 0; i < def->input_count; i++) {
    dim_counts[i] = def->inputs[i].dim_count;
    memcpy(dims[i], def->inputs[i].dims, sizeof dims[i]);
    if (def->gear_count) dims[i][0] = (int64_t)batch;
  }
  struct sim_onnx_result result;
  char reason[512];
  if (sim_onnx_run(def->onnx, (const void *const *)inputs, dim_counts, (const int64_t(*)[SIM_ONNX_MAX_DIMS])dims, &result, reason,
                   sizeof reason) != 0) {
    return sim_internal_fail(ACL_ERROR_GE_FAILURE, "%s: the ONNX graph failed: %s", fn, reason);
  }
  aclError rc = ACL_SUCCESS;
  for (uint32_t i = 0; i < def->output_count && rc == ACL_SUCCESS; i++) {
    const struct sim_tensor *t = &def->outputs[i];
    size_t expected = (size_t)sim_internal_elements(t, batch) * sim_internal_dtype_size(t->dtype);
    if (result.dtype[i] != t->dtype || result.bytes[i] != expected) {
      rc = sim_internal_fail(ACL_ERROR_GE_FAILURE, "%s: output '%s' came back as %zu bytes of aclDataType %d, the model declares %zu of %d", fn,
                             t->name, result.bytes[i], result.dtype[i], expected, t->dtype);
    } else {
      memcpy(outputs[i], result.data[i], expected);
    }
  }
  sim_onnx_result_free(&result);
  return rc;
}
