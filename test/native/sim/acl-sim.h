/*
 * Internal declarations of the simulated AscendCL (test-only). The public functions keep the
 * real AscendCL names and prototypes (see CANN AscendCL API reference); everything named
 * sim_internal_* is shared between the runtime half (libacl_rt.so) and the model half
 * (libacl_mdl.so) of the CANN 9 split build, so it must be exported too.
 */
#ifndef SERVE_FN_ACL_SIM_H
#define SERVE_FN_ACL_SIM_H

#include <stddef.h>
#include <stdint.h>

#define SIM_API __attribute__((visibility("default")))

typedef int aclError;
typedef void *aclrtContext;
typedef void *aclrtStream;

enum {
  ACL_SUCCESS = 0,
  ACL_ERROR_INVALID_PARAM = 100000,
  ACL_ERROR_UNINITIALIZE = 100001,
  ACL_ERROR_REPEAT_INITIALIZE = 100002,
  ACL_ERROR_INVALID_MODEL_ID = 100011,
  ACL_ERROR_PARSE_MODEL = 100013,
  ACL_ERROR_MODEL_INPUT_NOT_MATCH = 100017,
  ACL_ERROR_MODEL_OUTPUT_NOT_MATCH = 100018,
  ACL_ERROR_MODEL_NOT_DYNAMIC = 100019,
  ACL_ERROR_REPEAT_FINALIZE = 100037,
  ACL_ERROR_BAD_ALLOC = 200000,
  ACL_ERROR_API_NOT_SUPPORT = 200001,
  ACL_ERROR_INVALID_RESOURCE_HANDLE = 200005,
  ACL_ERROR_RT_INVALID_DEVICEID = 107001,
  ACL_ERROR_RT_CONTEXT_NULL = 107002,
  ACL_ERROR_RT_STREAM_CONTEXT = 107003,
  ACL_ERROR_RT_MODEL_CONTEXT = 107004,
  ACL_ERROR_RT_MEMORY_ALLOCATION = 207001,
  ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID = 145002,
  ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID = 145013,
  ACL_ERROR_GE_FAILURE = 500002,
};

enum { ACL_FLOAT = 0, ACL_INT32 = 3, ACL_INT64 = 9 };
enum { ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE = 1, ACL_MEMCPY_DEVICE_TO_HOST = 2, ACL_MEMCPY_DEVICE_TO_DEVICE = 3 };

#define ACL_MAX_DIM_CNT 128
#define ACL_MAX_TENSOR_NAME_LEN 128
#define ACL_MAX_BATCH_NUM 128
#define ACL_DYNAMIC_TENSOR_NAME "ascend_mbatch_shape_data"

typedef struct aclmdlIODims {
  char name[ACL_MAX_TENSOR_NAME_LEN];
  size_t dimCount;
  int64_t dims[ACL_MAX_DIM_CNT];
} aclmdlIODims;

typedef struct aclmdlBatch {
  size_t batchCount;
  uint64_t batch[ACL_MAX_BATCH_NUM];
} aclmdlBatch;

typedef struct aclDataBuffer {
  void *data;
  size_t size;
} aclDataBuffer;

/* ---- Test model format (README.md) ---- */
#define SIM_OM_MAGIC "SFSIMOM1"
#define SIM_OM_HEADER_SIZE 32
#define SIM_OM_VERSION_OPS 1  /* ops 1..4 with their tensors and weights */
#define SIM_OM_VERSION_ONNX 2 /* op 5 around an ONNX graph */
#define SIM_OM_FLAG_FP16_COMPUTE 1u
#define SIM_MAX_DIMS 8
/* An ONNX model with gears has its inputs plus the dynamic-batch input in one dataset. */
#define SIM_MAX_INPUTS (SIM_MAX_DATASET_BUFFERS - 1)
#define SIM_MAX_OUTPUTS SIM_MAX_DATASET_BUFFERS
#define SIM_MAX_GEARS 16
#define SIM_NAME_LEN 64
#define SIM_MAX_DATASET_BUFFERS 16

enum sim_op { SIM_OP_ADD = 1, SIM_OP_MUL = 2, SIM_OP_RELU = 3, SIM_OP_MATMUL = 4, SIM_OP_ONNX = 5 };

struct sim_tensor {
  char name[SIM_NAME_LEN];
  int32_t dtype;
  uint32_t dim_count;
  int64_t dims[SIM_MAX_DIMS];
};

struct sim_model_def {
  uint32_t op;
  uint32_t input_count; /* declared inputs, without the dynamic-batch tensor */
  uint32_t output_count;
  uint32_t gear_count;
  uint64_t gears[SIM_MAX_GEARS];
  struct sim_tensor inputs[SIM_MAX_INPUTS];
  struct sim_tensor outputs[SIM_MAX_OUTPUTS];
  uint32_t weight_count;
  float *weights;        /* owned by the loaded model; NULL in descriptions */
  struct sim_onnx *onnx; /* op onnx: the runner, owned by the loaded model; NULL in descriptions */
};

struct aclmdlDesc {
  struct sim_model_def def; /* weights stay NULL: a description carries no data */
};

struct aclmdlDataset {
  size_t count;
  aclDataBuffer *buffers[SIM_MAX_DATASET_BUFFERS];
};

/* Parses a model image; on failure returns 0 and writes a reason into err. */
int sim_internal_parse_model(const uint8_t *image, size_t size, struct sim_model_def *def, char *err, size_t err_len);
/* Format 2 after the header and gears (def->op and gears set): opens the ONNX graph, whose runner gives the tensors. */
int sim_internal_parse_onnx_model(const uint32_t *header, const uint8_t *body, size_t body_size, struct sim_model_def *def, char *err,
                                  size_t err_len);
/* Frees what a parsed definition owns (weights, the ONNX runner). */
void sim_internal_free_model_def(struct sim_model_def *def);
/* Elements of a tensor with -1 (the batch dimension) replaced by batch. */
uint64_t sim_internal_elements(const struct sim_tensor *t, uint64_t batch);
void sim_internal_run_op(const struct sim_model_def *def, uint64_t batch, void *const *inputs, void *const *outputs);
/* Runs an op-onnx model at `batch` rows into the output buffers; ACL_SUCCESS or a failure code with its message set. */
aclError sim_internal_run_onnx(const char *fn, const struct sim_model_def *def, uint64_t batch, void *const *inputs, void *const *outputs);

/* ---- Loaded models (model half: sim-model.c, sim-execute.c) ---- */
struct sim_model {
  uint32_t id;
  struct sim_model_def def;
  struct sim_context *ctx;
  int executing; /* guarded by the model registry lock */
};

/* Finds a loaded model and marks it executing; *already_executing says whether it was busy. */
struct sim_model *sim_model_begin_execute(uint32_t id, int *already_executing);
void sim_model_end_execute(struct sim_model *model);

/* ---- Shared runtime state (sim-core.c, sim-device.c, sim-memory.c) ---- */
enum sim_counter_id {
  SIM_ACL_INIT_CALLS,
  SIM_ACL_FINALIZE_CALLS,
  SIM_DEVICE_ALLOCS,
  SIM_DEVICE_BYTES,
  SIM_HOST_ALLOCS,
  SIM_CONTEXTS,
  SIM_STREAMS,
  SIM_DEVICES_SET,
  SIM_CONTEXT_SWITCHES,
  SIM_MODELS_LOADED,
  SIM_MODEL_DESCS,
  SIM_DATASETS,
  SIM_DATA_BUFFERS,
  SIM_EXECUTES,
  SIM_EXECUTE_NS,
  SIM_MAX_CONCURRENT_EXECUTES,
  SIM_MAX_CONCURRENT_EXECUTES_ALL,
  SIM_LAST_BATCH_SIZE,
  SIM_ONNX_GRAPHS,
  SIM_COUNTER_COUNT
};

struct sim_context {
  uint32_t magic;
  int32_t device;
  int is_default;
};

SIM_API aclError sim_internal_fail(aclError code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
SIM_API int sim_internal_initialized(void);
SIM_API void sim_internal_count(enum sim_counter_id id, int64_t delta);
SIM_API void sim_internal_peak(enum sim_counter_id id, int64_t value);
SIM_API void sim_internal_set(enum sim_counter_id id, int64_t value);
/* The calling thread's current context after validating it is still alive, or NULL. */
SIM_API struct sim_context *sim_internal_current_context(void);
SIM_API int sim_internal_context_alive(const struct sim_context *ctx);
/* Succeeds when the stream is alive and belongs to the calling thread's current context. */
SIM_API aclError sim_internal_check_stream(const char *fn, aclrtStream stream);
/* Bytes of device memory from ptr to the end of its allocation on `device`; 0 when not device memory. */
SIM_API size_t sim_internal_device_span(const void *ptr, int32_t device);
SIM_API uint64_t sim_internal_now_ns(void);
/* Bytes of one element of an aclDataType; 0 for a type the simulation does not know (sim-onnx.c). */
SIM_API size_t sim_internal_dtype_size(int32_t dtype);
SIM_API uint32_t sim_internal_execute_delay_ms(void);

#endif
