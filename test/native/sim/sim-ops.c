/* Simulated AscendCL: the four ops a test model can describe (README.md), run on host memory. */
#include "acl-sim.h"

void sim_internal_run_op(const struct sim_model_def *def, uint64_t batch, void *const *inputs, void *const *outputs) {
  const struct sim_tensor *in = &def->inputs[0];
  uint64_t n = sim_internal_elements(in, batch);
  if (def->op == SIM_OP_MATMUL) {
    uint64_t rows = in->dims[0] < 0 ? batch : (uint64_t)in->dims[0], k = (uint64_t)in->dims[1];
    uint64_t cols = (uint64_t)def->outputs[0].dims[1];
    const float *x = inputs[0];
    float *y = outputs[0];
    for (uint64_t r = 0; r < rows; r++) {
      for (uint64_t c = 0; c < cols; c++) {
        float sum = 0;
        for (uint64_t i = 0; i < k; i++) sum += x[r * k + i] * def->weights[i * cols + c];
        y[r * cols + c] = sum;
      }
    }
  } else if (def->op == SIM_OP_RELU) {
    const float *x = inputs[0];
    float *y = outputs[0];
    for (uint64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;
  } else if (in->dtype == ACL_INT32) {
    const int32_t *a = inputs[0], *b = inputs[1];
    int32_t *y = outputs[0];
    for (uint64_t i = 0; i < n; i++) y[i] = def->op == SIM_OP_ADD ? a[i] + b[i] : a[i] * b[i];
  } else {
    const float *a = inputs[0], *b = inputs[1];
    float *y = outputs[0];
    for (uint64_t i = 0; i < n; i++) y[i] = def->op == SIM_OP_ADD ? a[i] + b[i] : a[i] * b[i];
  }
}
