/*
 * Simulated AscendCL: model load/unload (bound to the loading context), model descriptions,
 * datasets and aclmdlSetDynamicBatchSize. Model ids are never reused, so a stale id is caught.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl-sim.h"

#define SIM_MAX_MODELS 64
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_model *models[SIM_MAX_MODELS];
static uint32_t next_id = 1;
static int executing_total;

static struct sim_model *find(uint32_t id) {
  for (int i = 0; i < SIM_MAX_MODELS; i++) {
    if (models[i] && models[i]->id == id) return models[i];
  }
  return NULL;
}

struct sim_model *sim_model_begin_execute(uint32_t id, int *already_executing) {
  pthread_mutex_lock(&lock);
  struct sim_model *model = find(id);
  if (model) {
    *already_executing = model->executing++ > 0;
    sim_internal_peak(SIM_MAX_CONCURRENT_EXECUTES, model->executing);
    sim_internal_peak(SIM_MAX_CONCURRENT_EXECUTES_ALL, ++executing_total);
  }
  pthread_mutex_unlock(&lock);
  return model;
}

void sim_model_end_execute(struct sim_model *model) {
  pthread_mutex_lock(&lock);
  model->executing--;
  executing_total--;
  pthread_mutex_unlock(&lock);
}

static aclError require_context(const char *fn, struct sim_context **ctx) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", fn);
  *ctx = sim_internal_current_context();
  if (!*ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: no context is current on this thread", fn);
  return ACL_SUCCESS;
}

static aclError load(const char *fn, const uint8_t *image, size_t size, uint32_t *model_id) {
  struct sim_context *ctx;
  aclError rc = require_context(fn, &ctx);
  if (rc != ACL_SUCCESS) return rc;
  if (!model_id) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: modelId is NULL", fn);
  char reason[256];
  struct sim_model *model = calloc(1, sizeof *model);
  if (!sim_internal_parse_model(image, size, &model->def, reason, sizeof reason)) {
    free(model);
    return sim_internal_fail(ACL_ERROR_PARSE_MODEL, "%s: %s", fn, reason);
  }
  model->ctx = ctx;
  pthread_mutex_lock(&lock);
  int slot = 0;
  while (slot < SIM_MAX_MODELS && models[slot]) slot++;
  if (slot < SIM_MAX_MODELS) {
    model->id = next_id++;
    models[slot] = model;
  }
  pthread_mutex_unlock(&lock);
  if (slot == SIM_MAX_MODELS) {
    sim_internal_free_model_def(&model->def);
    free(model);
    return sim_internal_fail(ACL_ERROR_BAD_ALLOC, "%s: more than %d models loaded", fn, SIM_MAX_MODELS);
  }
  sim_internal_count(SIM_MODELS_LOADED, 1);
  *model_id = model->id;
  return ACL_SUCCESS;
}

SIM_API aclError aclmdlLoadFromMem(const void *image, size_t size, uint32_t *model_id) {
  if (!image || size == 0) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlLoadFromMem: empty model");
  return load("aclmdlLoadFromMem", image, size, model_id);
}

SIM_API aclError aclmdlLoadFromFile(const char *path, uint32_t *model_id) {
  FILE *file = path ? fopen(path, "rb") : NULL;
  if (!file) return sim_internal_fail(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, "aclmdlLoadFromFile: cannot open '%s'", path ? path : "(null)");
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  uint8_t *image = malloc(size > 0 ? (size_t)size : 1);
  size_t got = fread(image, 1, size > 0 ? (size_t)size : 0, file);
  fclose(file);
  aclError rc = load("aclmdlLoadFromFile", image, got, model_id);
  free(image);
  return rc;
}

SIM_API aclError aclmdlUnload(uint32_t model_id) {
  struct sim_context *ctx;
  aclError rc = require_context("aclmdlUnload", &ctx);
  if (rc != ACL_SUCCESS) return rc;
  pthread_mutex_lock(&lock);
  struct sim_model *model = find(model_id);
  if (!model) rc = sim_internal_fail(ACL_ERROR_INVALID_MODEL_ID, "aclmdlUnload: no model with id %u", model_id);
  else if (model->ctx != ctx) rc = sim_internal_fail(ACL_ERROR_RT_MODEL_CONTEXT, "aclmdlUnload: model %u belongs to another context", model_id);
  else if (model->executing) rc = sim_internal_fail(ACL_ERROR_API_NOT_SUPPORT, "aclmdlUnload: model %u is executing", model_id);
  else {
    for (int i = 0; i < SIM_MAX_MODELS; i++) {
      if (models[i] == model) models[i] = NULL;
    }
  }
  pthread_mutex_unlock(&lock);
  if (rc != ACL_SUCCESS) return rc;
  sim_internal_free_model_def(&model->def);
  free(model);
  sim_internal_count(SIM_MODELS_LOADED, -1);
  return ACL_SUCCESS;
}

SIM_API aclError aclmdlSetDynamicBatchSize(uint32_t model_id, struct aclmdlDataset *dataset, size_t index, uint64_t batch) {
  struct sim_context *ctx;
  aclError rc = require_context("aclmdlSetDynamicBatchSize", &ctx);
  if (rc != ACL_SUCCESS) return rc;
  pthread_mutex_lock(&lock);
  struct sim_model *found = find(model_id);
  struct sim_model model = found ? *found : (struct sim_model){ 0 };
  pthread_mutex_unlock(&lock);
  const struct sim_model_def *def = &model.def;
  int is_gear = 0;
  for (uint32_t i = 0; i < def->gear_count; i++) is_gear |= def->gears[i] == batch;
  if (!found) return sim_internal_fail(ACL_ERROR_INVALID_MODEL_ID, "aclmdlSetDynamicBatchSize: no model with id %u", model_id);
  if (model.ctx != ctx) return sim_internal_fail(ACL_ERROR_RT_MODEL_CONTEXT, "aclmdlSetDynamicBatchSize: model %u belongs to another context", model_id);
  if (def->gear_count == 0) return sim_internal_fail(ACL_ERROR_MODEL_NOT_DYNAMIC, "aclmdlSetDynamicBatchSize: model %u has no batch gears", model_id);
  if (index != def->input_count) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlSetDynamicBatchSize: index %zu is not the dynamic input (%u)", index, def->input_count);
  }
  if (!is_gear) return sim_internal_fail(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, "aclmdlSetDynamicBatchSize: %llu is not a compiled gear", (unsigned long long)batch);
  if (!dataset || dataset->count <= index || sim_internal_device_span(dataset->buffers[index]->data, ctx->device) < sizeof batch) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlSetDynamicBatchSize: dataset has no device buffer at index %zu", index);
  }
  memcpy(dataset->buffers[index]->data, &batch, sizeof batch);
  return ACL_SUCCESS;
}

SIM_API struct aclmdlDesc *aclmdlCreateDesc(void) {
  sim_internal_count(SIM_MODEL_DESCS, 1);
  return calloc(1, sizeof(struct aclmdlDesc));
}

SIM_API aclError aclmdlDestroyDesc(struct aclmdlDesc *desc) {
  if (!desc) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlDestroyDesc: desc is NULL");
  free(desc);
  sim_internal_count(SIM_MODEL_DESCS, -1);
  return ACL_SUCCESS;
}

SIM_API aclError aclmdlGetDesc(struct aclmdlDesc *desc, uint32_t model_id) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "aclmdlGetDesc: aclInit has not been called");
  if (!desc) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetDesc: desc is NULL");
  pthread_mutex_lock(&lock);
  struct sim_model *model = find(model_id);
  if (model) desc->def = model->def;
  pthread_mutex_unlock(&lock);
  if (!model) return sim_internal_fail(ACL_ERROR_INVALID_MODEL_ID, "aclmdlGetDesc: no model with id %u", model_id);
  desc->def.weights = NULL;
  desc->def.onnx = NULL;
  return ACL_SUCCESS;
}

SIM_API struct aclmdlDataset *aclmdlCreateDataset(void) {
  sim_internal_count(SIM_DATASETS, 1);
  return calloc(1, sizeof(struct aclmdlDataset));
}

SIM_API aclError aclmdlDestroyDataset(const struct aclmdlDataset *dataset) {
  if (!dataset) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlDestroyDataset: dataset is NULL");
  free((void *)dataset);
  sim_internal_count(SIM_DATASETS, -1);
  return ACL_SUCCESS;
}

SIM_API aclError aclmdlAddDatasetBuffer(struct aclmdlDataset *dataset, aclDataBuffer *buffer) {
  if (!dataset || !buffer || dataset->count == SIM_MAX_DATASET_BUFFERS) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlAddDatasetBuffer: NULL argument or dataset full");
  }
  dataset->buffers[dataset->count++] = buffer;
  return ACL_SUCCESS;
}

SIM_API size_t aclmdlGetDatasetNumBuffers(const struct aclmdlDataset *dataset) { return dataset ? dataset->count : 0; }

SIM_API aclDataBuffer *aclmdlGetDatasetBuffer(const struct aclmdlDataset *dataset, size_t index) {
  return dataset && index < dataset->count ? dataset->buffers[index] : NULL;
}
