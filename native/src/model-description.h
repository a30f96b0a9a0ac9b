// What a loaded OM model takes and gives, read once from its aclmdlDesc. The dynamic-batch input
// ATC adds (ACL_DYNAMIC_TENSOR_NAME) is kept apart: callers never feed it.
#ifndef SERVE_FN_NPU_MODEL_DESCRIPTION_H
#define SERVE_FN_NPU_MODEL_DESCRIPTION_H

#include <cstdint>
#include <string>
#include <vector>

#include "acl-api.h"
#include "npu-status.h"

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // -1 in dim 0 for the batch of a dynamic-batch model
  int dataType;               // aclDataType
  size_t byteSize;            // at the largest gear for dynamic-batch models
  size_t bytesPerSample;      // byteSize / largest gear; 0 for static models
  size_t aclIndex;            // index in the model's aclmdlDataset
};

struct ModelDescription {
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::vector<uint64_t> batchGears;  // ascending; empty for static models
  size_t aclInputCount = 0;
  size_t dynamicInputIndex = 0;  // valid only when batchGears is not empty

  bool dynamic() const { return !batchGears.empty(); }
  // The smallest compiled gear that holds `batch`; 0 when none does.
  uint64_t GearFor(uint64_t batch) const;
  // Checks request sizes on the JS thread before anything is queued; "" when they fit.
  std::string Validate(const std::vector<size_t> &inputSizes, uint64_t batch) const;
};

NpuStatus DescribeModel(const AclApi &api, aclmdlDesc *desc, ModelDescription *out);

#endif
