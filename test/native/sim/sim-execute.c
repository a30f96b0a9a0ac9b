/*
 * Simulated AscendCL: aclmdlExecute / aclmdlExecuteAsync. Both run the op at once on the calling
 * thread (after ACL_SIM_EXECUTE_DELAY_MS), inside a window in which a second execute of the same
 * model is refused, so an addon that does not serialize a model's executions sees errors and a
 * max_concurrent_executes counter above 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "acl-sim.h"

static void sleep_ms(uint32_t ms) {
  struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static aclError check_buffers(const char *fn, const char *kind, const struct aclmdlDataset *set, const struct sim_tensor *tensors,
                              uint32_t count, uint64_t batch, int32_t device, void **pointers) {
  for (uint32_t i = 0; i < count; i++) {
    const aclDataBuffer *buffer = set->buffers[i];
    size_t needed = (size_t)sim_internal_elements(&tensors[i], batch) * sim_internal_dtype_size(tensors[i].dtype);
    if (buffer->size < needed) {
      return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: %s %u ('%s') buffer holds %zu bytes, the model needs %zu", fn, kind, i,
                               tensors[i].name, buffer->size, needed);
    }
    if (sim_internal_device_span(buffer->data, device) < buffer->size) {
      return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: %s %u ('%s') is not %zu bytes of device %d memory", fn, kind, i,
                               tensors[i].name, buffer->size, device);
    }
    pointers[i] = buffer->data;
  }
  return ACL_SUCCESS;
}

static aclError read_batch(const char *fn, const struct sim_model *model, const struct aclmdlDataset *input, int32_t device,
                           uint64_t *batch) {
  const struct sim_model_def *def = &model->def;
  *batch = 1;
  if (def->gear_count == 0) return ACL_SUCCESS;
  const aclDataBuffer *dynamic = input->buffers[def->input_count];
  if (sim_internal_device_span(dynamic->data, device) < sizeof *batch) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: the dynamic batch input is not device memory", fn);
  }
  *batch = *(const uint64_t *)dynamic->data;
  for (uint32_t i = 0; i < def->gear_count; i++) {
    if (def->gears[i] == *batch) return ACL_SUCCESS;
  }
  return sim_internal_fail(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
                           "%s: batch %llu is not a compiled gear; call aclmdlSetDynamicBatchSize first", fn, (unsigned long long)*batch);
}

static aclError run(const char *fn, struct sim_model *model, struct sim_context *ctx, const struct aclmdlDataset *input,
                    struct aclmdlDataset *output) {
  const struct sim_model_def *def = &model->def;
  uint32_t inputs = def->input_count + (def->gear_count > 0);
  if (model->ctx != ctx) return sim_internal_fail(ACL_ERROR_RT_MODEL_CONTEXT, "%s: model %u was loaded in another context", fn, model->id);
  if (!input || input->count != inputs) {
    return sim_internal_fail(ACL_ERROR_MODEL_INPUT_NOT_MATCH, "%s: model %u takes %u input buffers", fn, model->id, inputs);
  }
  if (!output || output->count != def->output_count) {
    return sim_internal_fail(ACL_ERROR_MODEL_OUTPUT_NOT_MATCH, "%s: model %u gives %u output buffers", fn, model->id, def->output_count);
  }
  uint64_t batch;
  void *in[SIM_MAX_INPUTS], *out[SIM_MAX_OUTPUTS];
  aclError rc = read_batch(fn, model, input, ctx->device, &batch);
  if (rc == ACL_SUCCESS) rc = check_buffers(fn, "input", input, def->inputs, def->input_count, batch, ctx->device, in);
  if (rc == ACL_SUCCESS) rc = check_buffers(fn, "output", output, def->outputs, def->output_count, batch, ctx->device, out);
  if (rc != ACL_SUCCESS) return rc;
  uint64_t start = sim_internal_now_ns();
  uint32_t delay = sim_internal_execute_delay_ms();
  if (delay) sleep_ms(delay);
  if (def->op == SIM_OP_ONNX) rc = sim_internal_run_onnx(fn, def, batch, in, out);
  else sim_internal_run_op(def, batch, in, out);
  if (rc != ACL_SUCCESS) return rc;
  sim_internal_count(SIM_EXECUTE_NS, (int64_t)(sim_internal_now_ns() - start));
  sim_internal_count(SIM_EXECUTES, 1);
  if (def->gear_count) sim_internal_set(SIM_LAST_BATCH_SIZE, (int64_t)batch);
  return ACL_SUCCESS;
}

static aclError execute(const char *fn, uint32_t model_id, const struct aclmdlDataset *input, struct aclmdlDataset *output,
                        aclrtStream stream) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", fn);
  struct sim_context *ctx = sim_internal_current_context();
  if (!ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: no context is current on this thread", fn);
  if (stream) {
    aclError rc = sim_internal_check_stream(fn, stream);
    if (rc != ACL_SUCCESS) return rc;
  }
  int busy = 0;
  struct sim_model *model = sim_model_begin_execute(model_id, &busy);
  if (!model) return sim_internal_fail(ACL_ERROR_INVALID_MODEL_ID, "%s: no model with id %u", fn, model_id);
  aclError rc = busy ? sim_internal_fail(ACL_ERROR_API_NOT_SUPPORT,
                                         "%s: model %u is already executing on another stream or thread; serialize its executions", fn,
                                         model_id)
                     : run(fn, model, ctx, input, output);
  sim_model_end_execute(model);
  return rc;
}

SIM_API aclError aclmdlExecute(uint32_t model_id, const struct aclmdlDataset *input, struct aclmdlDataset *output) {
  return execute("aclmdlExecute", model_id, input, output, NULL);
}

SIM_API aclError aclmdlExecuteAsync(uint32_t model_id, const struct aclmdlDataset *input, struct aclmdlDataset *output,
                                    aclrtStream stream) {
  if (!stream) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlExecuteAsync: stream is NULL");
  return execute("aclmdlExecuteAsync", model_id, input, output, stream);
}
