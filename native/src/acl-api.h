// The AscendCL subset this addon calls, declared here so the addon builds without CANN headers
// (prototypes, enums and codes from CANN AscendCL API reference). The library is bound
// at run time by AclLibrary, one function pointer per entry of the lists below.
#ifndef SERVE_FN_NPU_ACL_API_H
#define SERVE_FN_NPU_ACL_API_H

#include <cstddef>
#include <cstdint>

extern "C" {
typedef int aclError;
typedef void *aclrtContext;
typedef void *aclrtStream;
typedef struct aclDataBuffer aclDataBuffer;
typedef struct aclmdlDataset aclmdlDataset;
typedef struct aclmdlDesc aclmdlDesc;

constexpr size_t ACL_MAX_DIM_CNT = 128;
constexpr size_t ACL_MAX_TENSOR_NAME_LEN = 128;
constexpr size_t ACL_MAX_BATCH_NUM = 128;

typedef struct aclmdlIODims {
  char name[ACL_MAX_TENSOR_NAME_LEN];
  size_t dimCount;
  int64_t dims[ACL_MAX_DIM_CNT];
} aclmdlIODims;

typedef struct aclmdlBatch {
  size_t batchCount;
  uint64_t batch[ACL_MAX_BATCH_NUM];
} aclmdlBatch;
}

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_REPEAT_INITIALIZE = 100002;
constexpr int ACL_MEMCPY_HOST_TO_DEVICE = 1;
constexpr int ACL_MEMCPY_DEVICE_TO_HOST = 2;
constexpr int ACL_MEM_MALLOC_HUGE_FIRST = 0;
constexpr int ACL_HBM_MEM = 1;
constexpr const char *ACL_DYNAMIC_TENSOR_NAME = "ascend_mbatch_shape_data";

// X(name, return type, parameter list). Enum parameters are passed as int: same ABI as C enums.
#define SERVE_FN_ACL_REQUIRED_FUNCTIONS(X)                                                      \
  X(aclInit, aclError, (const char *configPath))                                              \
  X(aclFinalize, aclError, (void))                                                            \
  X(aclrtSetDevice, aclError, (int32_t deviceId))                                             \
  X(aclrtResetDevice, aclError, (int32_t deviceId))                                           \
  X(aclrtGetDeviceCount, aclError, (uint32_t * count))                                        \
  X(aclrtCreateContext, aclError, (aclrtContext * context, int32_t deviceId))                 \
  X(aclrtDestroyContext, aclError, (aclrtContext context))                                    \
  X(aclrtSetCurrentContext, aclError, (aclrtContext context))                                 \
  X(aclrtCreateStream, aclError, (aclrtStream * stream))                                      \
  X(aclrtDestroyStream, aclError, (aclrtStream stream))                                       \
  X(aclrtSynchronizeStream, aclError, (aclrtStream stream))                                   \
  X(aclrtMalloc, aclError, (void **devPtr, size_t size, int policy))                          \
  X(aclrtFree, aclError, (void *devPtr))                                                      \
  X(aclrtMallocHost, aclError, (void **hostPtr, size_t size))                                 \
  X(aclrtFreeHost, aclError, (void *hostPtr))                                                 \
  X(aclrtMemcpyAsync, aclError,                                                               \
    (void *dst, size_t destMax, const void *src, size_t count, int kind, aclrtStream stream)) \
  X(aclrtGetMemInfo, aclError, (int attr, size_t *free, size_t *total))                       \
  X(aclmdlCreateDesc, aclmdlDesc *, (void))                                                   \
  X(aclmdlDestroyDesc, aclError, (aclmdlDesc * modelDesc))                                    \
  X(aclmdlGetDesc, aclError, (aclmdlDesc * modelDesc, uint32_t modelId))                      \
  X(aclmdlGetNumInputs, size_t, (aclmdlDesc * modelDesc))                                     \
  X(aclmdlGetNumOutputs, size_t, (aclmdlDesc * modelDesc))                                    \
  X(aclmdlGetInputSizeByIndex, size_t, (aclmdlDesc * modelDesc, size_t index))                \
  X(aclmdlGetOutputSizeByIndex, size_t, (aclmdlDesc * modelDesc, size_t index))               \
  X(aclmdlGetInputNameByIndex, const char *, (const aclmdlDesc *modelDesc, size_t index))     \
  X(aclmdlGetOutputNameByIndex, const char *, (const aclmdlDesc *modelDesc, size_t index))    \
  X(aclmdlGetInputDims, aclError, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims))  \
  X(aclmdlGetOutputDims, aclError, (const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims)) \
  X(aclmdlGetInputDataType, int, (const aclmdlDesc *modelDesc, size_t index))                 \
  X(aclmdlGetOutputDataType, int, (const aclmdlDesc *modelDesc, size_t index))                \
  X(aclmdlGetInputIndexByName, aclError, (const aclmdlDesc *modelDesc, const char *name, size_t *index)) \
  X(aclmdlGetDynamicBatch, aclError, (const aclmdlDesc *modelDesc, aclmdlBatch *batch))       \
  X(aclmdlLoadFromFile, aclError, (const char *modelPath, uint32_t *modelId))                 \
  X(aclmdlLoadFromMem, aclError, (const void *model, size_t modelSize, uint32_t *modelId))    \
  X(aclmdlUnload, aclError, (uint32_t modelId))                                               \
  X(aclmdlCreateDataset, aclmdlDataset *, (void))                                             \
  X(aclmdlDestroyDataset, aclError, (const aclmdlDataset *dataset))                           \
  X(aclmdlAddDatasetBuffer, aclError, (aclmdlDataset * dataset, aclDataBuffer *dataBuffer))   \
  X(aclCreateDataBuffer, aclDataBuffer *, (void *data, size_t size))                          \
  X(aclDestroyDataBuffer, aclError, (const aclDataBuffer *dataBuffer))                        \
  X(aclmdlExecuteAsync, aclError,                                                             \
    (uint32_t modelId, const aclmdlDataset *input, aclmdlDataset *output, aclrtStream stream)) \
  X(aclmdlSetDynamicBatchSize, aclError,                                                      \
    (uint32_t modelId, aclmdlDataset * dataset, size_t index, uint64_t batchSize))

// Useful but absent from some releases: a missing one leaves its pointer null.
#define SERVE_FN_ACL_OPTIONAL_FUNCTIONS(X)        \
  X(aclGetRecentErrMsg, const char *, (void))     \
  X(aclrtGetVersion, aclError, (int32_t * major, int32_t *minor, int32_t *patch))

struct AclApi {
#define SERVE_FN_ACL_POINTER(name, ret, params) ret(*name) params = nullptr;
  SERVE_FN_ACL_REQUIRED_FUNCTIONS(SERVE_FN_ACL_POINTER)
  SERVE_FN_ACL_OPTIONAL_FUNCTIONS(SERVE_FN_ACL_POINTER)
#undef SERVE_FN_ACL_POINTER
};

#endif
