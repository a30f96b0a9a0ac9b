/*
 * Simulated AscendCL: queries on a model description. A model with batch gears gets the extra
 * last input ATC adds (ACL_DYNAMIC_TENSOR_NAME, one INT64); its declared inputs report -1 in
 * dim 0 and their size at the largest gear. Outputs report the largest gear in dim 0 (the shape
 * the output buffers must hold), so callers must not rely on -1 there.
 */
#include <string.h>

#include "acl-sim.h"

static int is_dynamic_input(const struct aclmdlDesc *desc, size_t index) {
  return desc->def.gear_count > 0 && index == desc->def.input_count;
}

static uint64_t largest_gear(const struct sim_model_def *def) { return def->gear_count ? def->gears[def->gear_count - 1] : 1; }

static size_t tensor_size(const struct sim_model_def *def, const struct sim_tensor *t) {
  return (size_t)sim_internal_elements(t, largest_gear(def)) * sim_internal_dtype_size(t->dtype);
}

SIM_API size_t aclmdlGetNumInputs(struct aclmdlDesc *desc) {
  return desc ? desc->def.input_count + (desc->def.gear_count > 0) : 0;
}

SIM_API size_t aclmdlGetNumOutputs(struct aclmdlDesc *desc) { return desc ? desc->def.output_count : 0; }

SIM_API size_t aclmdlGetInputSizeByIndex(struct aclmdlDesc *desc, size_t index) {
  if (!desc) return 0;
  if (is_dynamic_input(desc, index)) return sizeof(uint64_t);
  return index < desc->def.input_count ? tensor_size(&desc->def, &desc->def.inputs[index]) : 0;
}

SIM_API size_t aclmdlGetOutputSizeByIndex(struct aclmdlDesc *desc, size_t index) {
  return desc && index < desc->def.output_count ? tensor_size(&desc->def, &desc->def.outputs[index]) : 0;
}

SIM_API const char *aclmdlGetInputNameByIndex(const struct aclmdlDesc *desc, size_t index) {
  if (!desc) return NULL;
  if (is_dynamic_input(desc, index)) return ACL_DYNAMIC_TENSOR_NAME;
  return index < desc->def.input_count ? desc->def.inputs[index].name : NULL;
}

SIM_API const char *aclmdlGetOutputNameByIndex(const struct aclmdlDesc *desc, size_t index) {
  return desc && index < desc->def.output_count ? desc->def.outputs[index].name : NULL;
}

static void fill_dims(const struct sim_tensor *t, int64_t dim0, aclmdlIODims *dims) {
  memset(dims, 0, sizeof *dims);
  strncpy(dims->name, t->name, sizeof dims->name - 1);
  dims->dimCount = t->dim_count;
  memcpy(dims->dims, t->dims, 8u * t->dim_count);
  dims->dims[0] = dim0;
}

SIM_API aclError aclmdlGetInputDims(const struct aclmdlDesc *desc, size_t index, aclmdlIODims *dims) {
  if (!desc || !dims) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetInputDims: NULL argument");
  if (is_dynamic_input(desc, index)) {
    memset(dims, 0, sizeof *dims);
    strcpy(dims->name, ACL_DYNAMIC_TENSOR_NAME);
    dims->dimCount = 1;
    dims->dims[0] = 1;
    return ACL_SUCCESS;
  }
  if (index >= desc->def.input_count) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetInputDims: no input %zu", index);
  fill_dims(&desc->def.inputs[index], desc->def.inputs[index].dims[0], dims);
  return ACL_SUCCESS;
}

SIM_API aclError aclmdlGetOutputDims(const struct aclmdlDesc *desc, size_t index, aclmdlIODims *dims) {
  if (!desc || !dims) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetOutputDims: NULL argument");
  if (index >= desc->def.output_count) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetOutputDims: no output %zu", index);
  const struct sim_tensor *t = &desc->def.outputs[index];
  fill_dims(t, desc->def.gear_count ? (int64_t)largest_gear(&desc->def) : t->dims[0], dims);
  return ACL_SUCCESS;
}

SIM_API int aclmdlGetInputDataType(const struct aclmdlDesc *desc, size_t index) {
  if (!desc) return -1;
  if (is_dynamic_input(desc, index)) return ACL_INT64;
  return index < desc->def.input_count ? desc->def.inputs[index].dtype : -1;
}

SIM_API int aclmdlGetOutputDataType(const struct aclmdlDesc *desc, size_t index) {
  return desc && index < desc->def.output_count ? desc->def.outputs[index].dtype : -1;
}

SIM_API aclError aclmdlGetInputIndexByName(const struct aclmdlDesc *desc, const char *name, size_t *index) {
  if (!desc || !name || !index) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetInputIndexByName: NULL argument");
  for (size_t i = 0; i < aclmdlGetNumInputs((struct aclmdlDesc *)desc); i++) {
    if (strcmp(aclmdlGetInputNameByIndex(desc, i), name) == 0) {
      *index = i;
      return ACL_SUCCESS;
    }
  }
  return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetInputIndexByName: no input named '%s'", name);
}

SIM_API aclError aclmdlGetDynamicBatch(const struct aclmdlDesc *desc, aclmdlBatch *batch) {
  if (!desc || !batch) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclmdlGetDynamicBatch: NULL argument");
  memset(batch, 0, sizeof *batch);
  batch->batchCount = desc->def.gear_count;
  memcpy(batch->batch, desc->def.gears, 8u * desc->def.gear_count);
  return ACL_SUCCESS;
}
