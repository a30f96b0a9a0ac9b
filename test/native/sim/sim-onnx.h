/*
 * ONNX runner of the simulated AscendCL (test-only): runs an ONNX graph on the host with ONNX
 * Runtime's CPU provider, so the simulated GE libraries and the simulated OM format 2 (op onnx)
 * give real results. Exported from libascendcl.so and libacl_rt.so. ONNX Runtime is bound at
 * run time (dlopen of $SIM_ORT_LIBRARY); see README.md.
 */
#ifndef SERVE_FN_SIM_ONNX_H
#define SERVE_FN_SIM_ONNX_H

#include <stddef.h>
#include <stdint.h>

#ifndef SIM_API
#define SIM_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_ONNX_MAX_IO 16
#define SIM_ONNX_MAX_DIMS 8

struct sim_onnx; /* one loaded graph: an ORT session */

struct sim_onnx_tensor_info {
  char name[64];
  int32_t dtype; /* aclDataType */
  uint32_t dim_count;
  int64_t dims[SIM_ONNX_MAX_DIMS]; /* -1: symbolic */
};

struct sim_onnx_result { /* outputs, malloc'd, in graph order */
  uint32_t count;
  void *data[SIM_ONNX_MAX_IO];
  size_t bytes[SIM_ONNX_MAX_IO];
  int32_t dtype[SIM_ONNX_MAX_IO];
  uint32_t dim_count[SIM_ONNX_MAX_IO];
  int64_t dims[SIM_ONNX_MAX_IO][SIM_ONNX_MAX_DIMS];
};

/* fp16_compute != 0 rounds every float32 input and output to binary16 precision, as GE's default fp16 precision mode would. */
SIM_API int sim_onnx_open(const void *bytes, size_t size, int fp16_compute, struct sim_onnx **out, char *err, size_t err_len);
SIM_API uint32_t sim_onnx_input_count(const struct sim_onnx *g);
SIM_API uint32_t sim_onnx_output_count(const struct sim_onnx *g);
SIM_API void sim_onnx_input_info(const struct sim_onnx *g, uint32_t index, struct sim_onnx_tensor_info *info);
SIM_API void sim_onnx_output_info(const struct sim_onnx *g, uint32_t index, struct sim_onnx_tensor_info *info);
/* Inputs in graph order with their shapes; thread-safe on one graph. 0 on success, else -1 and err set. */
SIM_API int sim_onnx_run(struct sim_onnx *g, const void *const *inputs, const uint32_t *dim_counts,
                         const int64_t (*dims)[SIM_ONNX_MAX_DIMS], struct sim_onnx_result *result, char *err, size_t err_len);
SIM_API void sim_onnx_result_free(struct sim_onnx_result *result);
SIM_API void sim_onnx_close(struct sim_onnx *g);
/* An OM (format v2, op onnx) around ONNX bytes: batch gears (0 = static); malloc'd. */
SIM_API int sim_om_encode_onnx(const void *onnx, size_t onnx_size, const uint64_t *gears, uint32_t gear_count, int fp16_compute,
                               uint8_t **out, size_t *out_size, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
