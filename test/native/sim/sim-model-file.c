/*
 * Simulated AscendCL: reader of the test-only model format documented in README.md: the header
 * and gears of both versions, and the body of version 1 (version 2: sim-model-onnx.c).
 * Little-endian hosts only (x86-64, aarch64), like CANN itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl-sim.h"
#include "sim-onnx.h"

/* Format 1 ops take at most 4 inputs and 2 outputs; the tensor arrays are sized for ONNX graphs. */
#define V1_MAX_INPUTS 4
#define V1_MAX_OUTPUTS 2

struct reader {
  const uint8_t *data;
  size_t size;
  size_t offset;
};

static int take(struct reader *r, void *out, size_t n) {
  if (r->size - r->offset < n) return 0;
  memcpy(out, r->data + r->offset, n);
  r->offset += n;
  return 1;
}

uint64_t sim_internal_elements(const struct sim_tensor *t, uint64_t batch) {
  uint64_t n = 1;
  for (uint32_t i = 0; i < t->dim_count; i++) n *= t->dims[i] < 0 ? batch : (uint64_t)t->dims[i];
  return n;
}

static int read_tensor(struct reader *r, struct sim_tensor *t, uint32_t gear_count, char *err, size_t err_len) {
  if (!take(r, t->name, SIM_NAME_LEN) || !take(r, &t->dtype, 4) || !take(r, &t->dim_count, 4)) {
    snprintf(err, err_len, "truncated tensor record at byte %zu", r->offset);
    return 0;
  }
  if (t->name[0] == '\0' || memchr(t->name, '\0', SIM_NAME_LEN) == NULL) {
    snprintf(err, err_len, "tensor name must be 1..63 bytes, NUL-terminated");
    return 0;
  }
  if (t->dim_count < 1 || t->dim_count > SIM_MAX_DIMS) {
    snprintf(err, err_len, "tensor '%s' has %u dims (1..%d allowed)", t->name, t->dim_count, SIM_MAX_DIMS);
    return 0;
  }
  if (!take(r, t->dims, 8u * t->dim_count)) {
    snprintf(err, err_len, "truncated dims of tensor '%s'", t->name);
    return 0;
  }
  for (uint32_t i = 0; i < t->dim_count; i++) {
    int dynamic = gear_count > 0 && i == 0;
    if (dynamic ? t->dims[i] != -1 : t->dims[i] < 1) {
      snprintf(err, err_len, "tensor '%s' dim %u is %lld: dim 0 must be -1 exactly when the model has batch gears, other dims > 0",
               t->name, i, (long long)t->dims[i]);
      return 0;
    }
  }
  if (t->dtype != ACL_FLOAT && t->dtype != ACL_INT32) {
    snprintf(err, err_len, "tensor '%s' has data type %d; the simulation supports ACL_FLOAT (0) and ACL_INT32 (3)", t->name, t->dtype);
    return 0;
  }
  return 1;
}

static int same_shape(const struct sim_tensor *a, const struct sim_tensor *b) {
  return a->dtype == b->dtype && a->dim_count == b->dim_count && memcmp(a->dims, b->dims, 8u * a->dim_count) == 0;
}

static const char *check_op(const struct sim_model_def *d) {
  const struct sim_tensor *in = d->inputs, *out = d->outputs;
  switch (d->op) {
    case SIM_OP_ADD:
    case SIM_OP_MUL:
      if (d->input_count != 2 || d->output_count != 1) return "add/mul take 2 inputs and give 1 output";
      if (!same_shape(&in[0], &in[1]) || !same_shape(&in[0], &out[0])) return "add/mul tensors must share dims and data type";
      return d->weight_count == 0 ? NULL : "add/mul carry no weights";
    case SIM_OP_RELU:
      if (d->input_count != 1 || d->output_count != 1 || !same_shape(&in[0], &out[0])) return "relu maps 1 input to 1 output of the same dims";
      if (in[0].dtype != ACL_FLOAT) return "relu needs ACL_FLOAT";
      return d->weight_count == 0 ? NULL : "relu carries no weights";
    case SIM_OP_MATMUL:
      if (d->input_count != 1 || d->output_count != 1) return "matmul takes 1 input and gives 1 output";
      if (in[0].dim_count != 2 || out[0].dim_count != 2 || in[0].dims[0] != out[0].dims[0]) return "matmul maps [B,K] to [B,N]";
      if (in[0].dtype != ACL_FLOAT || out[0].dtype != ACL_FLOAT) return "matmul needs ACL_FLOAT";
      if ((uint64_t)d->weight_count != (uint64_t)(in[0].dims[1] * out[0].dims[1])) return "matmul needs K*N weights";
      return NULL;
    default:
      return "unknown op (1 add, 2 mul, 3 relu, 4 matmul)";
  }
}

/* Format 1: the tensor records and the weights of ops 1..4. */
static int parse_ops_model(struct reader *r, const uint32_t *header, struct sim_model_def *def, char *err, size_t err_len) {
  def->input_count = header[2];
  def->output_count = header[3];
  def->weight_count = header[5];
  if (def->input_count < 1 || def->input_count > V1_MAX_INPUTS || def->output_count < 1 || def->output_count > V1_MAX_OUTPUTS) {
    snprintf(err, err_len, "counts out of range: %u inputs, %u outputs, %u gears", def->input_count, def->output_count, def->gear_count);
    return 0;
  }
  for (uint32_t i = 0; i < def->input_count; i++) {
    if (!read_tensor(r, &def->inputs[i], def->gear_count, err, err_len)) return 0;
  }
  for (uint32_t i = 0; i < def->output_count; i++) {
    if (!read_tensor(r, &def->outputs[i], def->gear_count, err, err_len)) return 0;
  }
  const char *problem = check_op(def);
  if (problem) {
    snprintf(err, err_len, "%s", problem);
    return 0;
  }
  if (r->size - r->offset != 4u * (size_t)def->weight_count) {
    snprintf(err, err_len, "expected %u weight bytes after the tensors, found %zu", 4u * def->weight_count, r->size - r->offset);
    return 0;
  }
  if (def->weight_count) {
    def->weights = malloc(4u * def->weight_count);
    take(r, def->weights, 4u * def->weight_count);
  }
  return 1;
}

int sim_internal_parse_model(const uint8_t *image, size_t size, struct sim_model_def *def, char *err, size_t err_len) {
  struct reader r = { image, size, 0 };
  uint32_t header[6];
  char magic[8];
  memset(def, 0, sizeof *def);
  if (!image || !take(&r, magic, 8) || memcmp(magic, SIM_OM_MAGIC, 8) != 0) {
    snprintf(err, err_len, "not a serve-fn simulated model: the file does not start with \"%s\"", SIM_OM_MAGIC);
    return 0;
  }
  if (!take(&r, header, sizeof header)) {
    snprintf(err, err_len, "truncated header (%zu of %d bytes)", size, SIM_OM_HEADER_SIZE);
    return 0;
  }
  if (header[0] != SIM_OM_VERSION_OPS && header[0] != SIM_OM_VERSION_ONNX) {
    snprintf(err, err_len, "unsupported format version %u (this simulation reads versions 1 and 2)", header[0]);
    return 0;
  }
  def->op = header[1];
  /* Both versions keep the gear count at byte 24 and the gears right after the header. */
  def->gear_count = header[4];
  if (def->gear_count > SIM_MAX_GEARS) {
    snprintf(err, err_len, "counts out of range: %u gears (at most %d)", def->gear_count, SIM_MAX_GEARS);
    return 0;
  }
  if (!take(&r, def->gears, 8u * def->gear_count)) {
    snprintf(err, err_len, "truncated batch gears");
    return 0;
  }
  for (uint32_t i = 0; i < def->gear_count; i++) {
    if (def->gears[i] == 0 || (i > 0 && def->gears[i] <= def->gears[i - 1])) {
      snprintf(err, err_len, "batch gears must be positive and increasing");
      return 0;
    }
  }
  int ok = header[0] == SIM_OM_VERSION_ONNX ? sim_internal_parse_onnx_model(header, image + r.offset, size - r.offset, def, err, err_len)
                                            : parse_ops_model(&r, header, def, err, err_len);
  if (!ok) sim_internal_free_model_def(def);
  return ok;
}

void sim_internal_free_model_def(struct sim_model_def *def) {
  free(def->weights);
  def->weights = NULL;
  if (def->onnx) sim_onnx_close(def->onnx);
  def->onnx = NULL;
}
