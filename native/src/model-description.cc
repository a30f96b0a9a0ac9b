#include "model-description.h"

#include <algorithm>

namespace {

NpuStatus ReadTensor(const AclApi &api, aclmdlDesc *desc, size_t index, bool input, TensorInfo *out) {
  aclmdlIODims dims{};
  NpuStatus status = input ? ACL_CALL(api, aclmdlGetInputDims, (desc, index, &dims))
                           : ACL_CALL(api, aclmdlGetOutputDims, (desc, index, &dims));
  if (!status.ok) return status;
  const char *name = input ? api.aclmdlGetInputNameByIndex(desc, index) : api.aclmdlGetOutputNameByIndex(desc, index);
  out->name = name ? name : dims.name;
  out->dims.assign(dims.dims, dims.dims + std::min(dims.dimCount, ACL_MAX_DIM_CNT));
  out->dataType = input ? api.aclmdlGetInputDataType(desc, index) : api.aclmdlGetOutputDataType(desc, index);
  out->byteSize = input ? api.aclmdlGetInputSizeByIndex(desc, index) : api.aclmdlGetOutputSizeByIndex(desc, index);
  out->bytesPerSample = 0;
  out->aclIndex = index;
  if (out->byteSize == 0) {
    return NpuStatus::Failure("tensor '" + out->name +
                              "' has a fully dynamic shape (size 0); only static and dynamic-batch models are supported");
  }
  return NpuStatus::Ok();
}

// A dynamic-batch model scales every tensor by the batch in dim 0. ACL reports -1 there for
// inputs; for outputs the largest gear may be reported instead, so both are accepted.
NpuStatus ApplyBatchDimension(uint64_t largestGear, TensorInfo *tensor) {
  bool batchFirst = !tensor->dims.empty() &&
                    (tensor->dims[0] == -1 || tensor->dims[0] == static_cast<int64_t>(largestGear));
  if (!batchFirst || tensor->byteSize % largestGear != 0) {
    return NpuStatus::Failure("tensor '" + tensor->name +
                              "' of a dynamic-batch model must carry the batch in dim 0 and a size divisible by the largest gear");
  }
  tensor->dims[0] = -1;
  tensor->bytesPerSample = tensor->byteSize / largestGear;
  return NpuStatus::Ok();
}

// Dynamic image sizes and dims (aclmdlSetDynamicHWSize/Dims) are not supported yet.
NpuStatus CheckFixedDims(const TensorInfo &tensor, size_t from) {
  for (size_t d = from; d < tensor.dims.size(); d++) {
    if (tensor.dims[d] < 0) {
      return NpuStatus::Failure("tensor '" + tensor.name + "' has a dynamic dim " + std::to_string(d) +
                                "; only dynamic batch (dim 0, with batch gears) is supported");
    }
  }
  return NpuStatus::Ok();
}

}  // namespace

uint64_t ModelDescription::GearFor(uint64_t batch) const {
  auto gear = std::lower_bound(batchGears.begin(), batchGears.end(), batch);
  return gear == batchGears.end() ? 0 : *gear;
}

std::string ModelDescription::Validate(const std::vector<size_t> &inputSizes, uint64_t batch) const {
  if (inputSizes.size() != inputs.size()) {
    return "expected " + std::to_string(inputs.size()) + " inputs, got " + std::to_string(inputSizes.size());
  }
  if (dynamic() && (batch < 1 || GearFor(batch) == 0)) {
    return "batch " + std::to_string(batch) + " is outside the compiled gears (largest " + std::to_string(batchGears.back()) + ")";
  }
  for (size_t i = 0; i < inputs.size(); i++) {
    size_t expected = dynamic() ? batch * inputs[i].bytesPerSample : inputs[i].byteSize;
    if (inputSizes[i] != expected) {
      return "input '" + inputs[i].name + "' needs " + std::to_string(expected) + " bytes, got " + std::to_string(inputSizes[i]);
    }
  }
  return "";
}

NpuStatus DescribeModel(const AclApi &api, aclmdlDesc *desc, ModelDescription *out) {
  aclmdlBatch batch{};
  NpuStatus status = ACL_CALL(api, aclmdlGetDynamicBatch, (desc, &batch));
  if (!status.ok) return status;
  out->batchGears.assign(batch.batch, batch.batch + std::min(batch.batchCount, ACL_MAX_BATCH_NUM));
  std::sort(out->batchGears.begin(), out->batchGears.end());
  out->aclInputCount = api.aclmdlGetNumInputs(desc);
  bool foundDynamicInput = false;
  for (size_t i = 0; i < out->aclInputCount; i++) {
    const char *name = api.aclmdlGetInputNameByIndex(desc, i);
    if (name && std::string(name) == ACL_DYNAMIC_TENSOR_NAME) {
      out->dynamicInputIndex = i;
      foundDynamicInput = true;
      continue;
    }
    TensorInfo tensor;
    if (!(status = ReadTensor(api, desc, i, true, &tensor)).ok) return status;
    out->inputs.push_back(std::move(tensor));
  }
  for (size_t i = 0, n = api.aclmdlGetNumOutputs(desc); i < n; i++) {
    TensorInfo tensor;
    if (!(status = ReadTensor(api, desc, i, false, &tensor)).ok) return status;
    out->outputs.push_back(std::move(tensor));
  }
  if (out->dynamic() != foundDynamicInput) {
    return NpuStatus::Failure(out->dynamic() ? "the model lists batch gears but has no " + std::string(ACL_DYNAMIC_TENSOR_NAME) + " input"
                                             : "the model has a dynamic batch input but lists no batch gears");
  }
  for (auto *tensors : {&out->inputs, &out->outputs}) {
    for (TensorInfo &tensor : *tensors) {
      if (out->dynamic() && !(status = ApplyBatchDimension(out->batchGears.back(), &tensor)).ok) return status;
      if (!(status = CheckFixedDims(tensor, out->dynamic() ? 1 : 0)).ok) return status;
    }
  }
  return NpuStatus::Ok();
}
