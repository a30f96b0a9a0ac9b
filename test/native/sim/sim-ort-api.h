/*
 * The part of ONNX Runtime's C API that the simulation's ONNX runner calls, transcribed from
 * microsoft/onnxruntime include/onnxruntime/core/session/onnxruntime_c_api.h (the header of
 * ORT_API_VERSION 8, onnxruntime 1.8). `struct OrtApi` is a table of function pointers that only
 * grows at its end (the header marks "End of Version 1 - DO NOT MODIFY ABOVE"), so a slot keeps its
 * index in every later release; every slot used here lies in that version 1 block (slots 0..101).
 * An index is the member's position in `struct OrtApi`, counted from 0. Only declarations are
 * transcribed: the runner reads the table as an array of function pointers and casts each slot it
 * uses to the prototype below, which avoids declaring the ~100 slots it never calls.
 */
#ifndef SERVE_FN_SIM_ORT_API_H
#define SERVE_FN_SIM_ORT_API_H

#include <stddef.h>
#include <stdint.h>

/* The OrtApi version requested from OrtApiBase::GetApi: the header the slots come from. */
#define SIM_ORT_API_VERSION 8

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef struct OrtAllocator OrtAllocator;

/* struct OrtApiBase: returned by the library's only C export, OrtGetApiBase. */
typedef struct OrtApiBase {
  const void *(*GetApi)(uint32_t version);
  const char *(*GetVersionString)(void);
} OrtApiBase;

/* enum ONNXTensorElementDataType (the TensorProto.DataType numbers). */
enum {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 = 2,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 = 3,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16 = 4,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 = 5,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 = 6,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL = 9,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 = 10,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE = 11,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32 = 12,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64 = 13,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 = 16,
};

enum { ORT_LOGGING_LEVEL_ERROR = 3 };    /* enum OrtLoggingLevel */
enum { OrtArenaAllocator = 1 };          /* enum OrtAllocatorType */
enum { OrtMemTypeDefault = 0 };          /* enum OrtMemType */

/* X(slot index, member name, return type, parameters): the OrtApi members the runner uses. */
#define SIM_ORT_SLOTS(X)                                                                                                       \
  X(2, GetErrorMessage, const char *, (const OrtStatus *status))                                                               \
  X(3, CreateEnv, OrtStatus *, (int logging_level, const char *logid, OrtEnv **out))                                           \
  X(8, CreateSessionFromArray, OrtStatus *,                                                                                    \
    (const OrtEnv *env, const void *model_data, size_t model_data_length, const OrtSessionOptions *options, OrtSession **out)) \
  X(9, Run, OrtStatus *,                                                                                                       \
    (OrtSession * session, const OrtRunOptions *run_options, const char *const *input_names, const OrtValue *const *inputs,  \
     size_t input_len, const char *const *output_names, size_t output_names_len, OrtValue **outputs))                        \
  X(10, CreateSessionOptions, OrtStatus *, (OrtSessionOptions * *options))                                                     \
  X(24, SetIntraOpNumThreads, OrtStatus *, (OrtSessionOptions * options, int intra_op_num_threads))                            \
  X(30, SessionGetInputCount, OrtStatus *, (const OrtSession *session, size_t *out))                                           \
  X(31, SessionGetOutputCount, OrtStatus *, (const OrtSession *session, size_t *out))                                          \
  X(33, SessionGetInputTypeInfo, OrtStatus *, (const OrtSession *session, size_t index, OrtTypeInfo **type_info))              \
  X(34, SessionGetOutputTypeInfo, OrtStatus *, (const OrtSession *session, size_t index, OrtTypeInfo **type_info))             \
  X(36, SessionGetInputName, OrtStatus *, (const OrtSession *session, size_t index, OrtAllocator *allocator, char **value))    \
  X(37, SessionGetOutputName, OrtStatus *, (const OrtSession *session, size_t index, OrtAllocator *allocator, char **value))   \
  X(49, CreateTensorWithDataAsOrtValue, OrtStatus *,                                                                           \
    (const OrtMemoryInfo *info, void *p_data, size_t p_data_len, const int64_t *shape, size_t shape_len, int type,            \
     OrtValue **out))                                                                                                          \
  X(51, GetTensorMutableData, OrtStatus *, (OrtValue * value, void **out))                                                     \
  X(55, CastTypeInfoToTensorInfo, OrtStatus *, (const OrtTypeInfo *type_info, const OrtTensorTypeAndShapeInfo **out))          \
  X(60, GetTensorElementType, OrtStatus *, (const OrtTensorTypeAndShapeInfo *info, int *out))                                  \
  X(61, GetDimensionsCount, OrtStatus *, (const OrtTensorTypeAndShapeInfo *info, size_t *out))                                 \
  X(62, GetDimensions, OrtStatus *, (const OrtTensorTypeAndShapeInfo *info, int64_t *dim_values, size_t dim_values_length))    \
  X(65, GetTensorTypeAndShape, OrtStatus *, (const OrtValue *value, OrtTensorTypeAndShapeInfo **out))                          \
  X(69, CreateCpuMemoryInfo, OrtStatus *, (int allocator_type, int mem_type, OrtMemoryInfo **out))                             \
  X(76, AllocatorFree, OrtStatus *, (OrtAllocator * allocator, void *p))                                                       \
  X(78, GetAllocatorWithDefaultOptions, OrtStatus *, (OrtAllocator * *out))                                                    \
  X(93, ReleaseStatus, void, (OrtStatus * status))                                                                             \
  X(95, ReleaseSession, void, (OrtSession * session))                                                                          \
  X(96, ReleaseValue, void, (OrtValue * value))                                                                                \
  X(98, ReleaseTypeInfo, void, (OrtTypeInfo * type_info))                                                                      \
  X(99, ReleaseTensorTypeAndShapeInfo, void, (OrtTensorTypeAndShapeInfo * info))                                               \
  X(100, ReleaseSessionOptions, void, (OrtSessionOptions * options))

#endif
