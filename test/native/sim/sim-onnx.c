/*
 * Simulated AscendCL: the ONNX runner (sim-onnx.h). ONNX Runtime is bound at run time, by dlopen of
 * $SIM_ORT_LIBRARY, so the simulation needs no ONNX Runtime headers or link step and uses the very
 * library onnxruntime-node ships, which the tests compare against. The library stays loaded for the
 * life of the process, with one OrtEnv, as ONNX Runtime expects.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-onnx.h"
#include "acl-sim.h"
#include "sim-ort-api.h"

struct sim_ort {
#define SIM_ORT_MEMBER(index, name, ret, params) ret(*name) params;
  SIM_ORT_SLOTS(SIM_ORT_MEMBER)
#undef SIM_ORT_MEMBER
};

struct sim_onnx {
  OrtSession *session;
  int fp16_compute;
  uint32_t input_count, output_count;
  struct sim_onnx_tensor_info inputs[SIM_ONNX_MAX_IO], outputs[SIM_ONNX_MAX_IO];
  const char *input_names[SIM_ONNX_MAX_IO], *output_names[SIM_ONNX_MAX_IO];
};

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static int bound;
static struct sim_ort ort;
static OrtEnv *env;
static OrtMemoryInfo *cpu_memory;
static OrtAllocator *allocator;

/* aclDataType codes (CANN AscendCL API reference, aclDataType) and the ONNX element type of each. */
static const struct {
  int32_t acl;
  int onnx;
  size_t bytes;
} TYPES[] = {
  { 0, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, 4 },   { 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16, 2 },
  { 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, 1 },    { 3, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, 4 },
  { 4, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, 1 },   { 6, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, 2 },
  { 7, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, 2 },  { 8, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, 4 },
  { 9, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, 8 },   { 10, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64, 8 },
  { 11, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, 8 }, { 12, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, 1 },
  { 27, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16, 2 },
};
#define TYPE_COUNT (sizeof TYPES / sizeof TYPES[0])

size_t sim_internal_dtype_size(int32_t dtype) {
  for (size_t i = 0; i < TYPE_COUNT; i++) {
    if (TYPES[i].acl == dtype) return TYPES[i].bytes;
  }
  return 0;
}

static int onnx_type_of(int32_t acl) {
  for (size_t i = 0; i < TYPE_COUNT; i++) {
    if (TYPES[i].acl == acl) return TYPES[i].onnx;
  }
  return 0;
}

static int32_t acl_type_of(int onnx) {
  for (size_t i = 0; i < TYPE_COUNT; i++) {
    if (TYPES[i].onnx == onnx) return TYPES[i].acl;
  }
  return -1;
}

/*
 * float32 -> the nearest binary16 value (ties to even), kept in a float32. Written out because C11
 * has no portable half type (_Float16 depends on the compiler and target). Normal halves keep 10 of
 * float's 23 fraction bits, so the low 13 bits are rounded off in the bit pattern (a carry into the
 * exponent is the correct result); below 2^-14 halves are spaced 2^-24, which adding and removing
 * 0.5f rounds to in float arithmetic; from 65520 (halfway past the largest half, 65504) up is inf.
 */
static float round_to_half(float x) {
  float a = fabsf(x);
  if (isnan(x) || !(a < 65520.0f)) return isnan(x) ? x : copysignf(INFINITY, x);
  if (a < 0x1p-14f) return copysignf((a + 0.5f) - 0.5f, x);
  uint32_t bits;
  memcpy(&bits, &a, 4);
  bits = (bits + 0x0FFFu + ((bits >> 13) & 1u)) & ~0x1FFFu;
  memcpy(&a, &bits, 4);
  return copysignf(a, x);
}

static void round_floats(float *values, uint64_t count) {
  for (uint64_t i = 0; i < count; i++) values[i] = round_to_half(values[i]);
}

/* Takes a status: 0 when it is success, else writes "<what>: <ORT message>", releases it and returns 1. */
static int failed(OrtStatus *status, const char *what, char *err, size_t err_len) {
  if (!status) return 0;
  snprintf(err, err_len, "%s: %s", what, ort.GetErrorMessage(status));
  ort.ReleaseStatus(status);
  return 1;
}

static int bind_runtime(char *err, size_t err_len) {
  const char *path = getenv("SIM_ORT_LIBRARY");
  if (!path || !*path) {
    snprintf(err, err_len, "SIM_ORT_LIBRARY is not set: the simulated ONNX runner needs the path of libonnxruntime.so.1 "
                           "(onnxruntime-node ships one in bin/napi-v6/linux/<arch>/)");
    return 0;
  }
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    snprintf(err, err_len, "SIM_ORT_LIBRARY=%s cannot be loaded: %s", path, dlerror());
    return 0;
  }
  const OrtApiBase *(*get_api_base)(void) = (const OrtApiBase *(*)(void))dlsym(library, "OrtGetApiBase");
  if (!get_api_base) {
    snprintf(err, err_len, "SIM_ORT_LIBRARY=%s is not ONNX Runtime: it exports no OrtGetApiBase", path);
    return 0;
  }
  const OrtApiBase *base = get_api_base();
  /* ONNX Runtime 1.N serves OrtApi versions 1..N, so release 1.8 is the oldest with version 8. */
  const char *version = base->GetVersionString();
  unsigned major = 0, minor = 0;
  if (!version || sscanf(version, "%u.%u", &major, &minor) != 2 || major != 1 || minor < SIM_ORT_API_VERSION) {
    snprintf(err, err_len, "SIM_ORT_LIBRARY=%s is ONNX Runtime '%s'; the simulated ONNX runner needs 1.%d or later", path,
             version ? version : "(none)", SIM_ORT_API_VERSION);
    return 0;
  }
  typedef void (*slot_fn)(void);
  const slot_fn *slots = (const slot_fn *)base->GetApi(SIM_ORT_API_VERSION);
  if (!slots) {
    snprintf(err, err_len, "ONNX Runtime %s at %s refuses OrtApi version %d", version, path, SIM_ORT_API_VERSION);
    return 0;
  }
#define SIM_ORT_BIND(index, name, ret, params) ort.name = (ret(*) params)slots[index];
  SIM_ORT_SLOTS(SIM_ORT_BIND)
#undef SIM_ORT_BIND
  return !failed(ort.CreateEnv(ORT_LOGGING_LEVEL_ERROR, "serve-fn-sim", &env), "OrtApi::CreateEnv", err, err_len) &&
         !failed(ort.CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &cpu_memory), "OrtApi::CreateCpuMemoryInfo", err,
                 err_len) &&
         !failed(ort.GetAllocatorWithDefaultOptions(&allocator), "OrtApi::GetAllocatorWithDefaultOptions", err, err_len);
}

static int ensure_bound(char *err, size_t err_len) {
  pthread_mutex_lock(&bind_lock);
  if (!bound) bound = bind_runtime(err, err_len);
  int ok = bound;
  pthread_mutex_unlock(&bind_lock);
  return ok;
}

static int read_info(const struct sim_onnx *g, int output, uint32_t index, struct sim_onnx_tensor_info *info, char *err,
                     size_t err_len) {
  const char *kind = output ? "output" : "input";
  char *name = NULL;
  OrtTypeInfo *type_info = NULL;
  const OrtTensorTypeAndShapeInfo *tensor = NULL;
  size_t dim_count = 0;
  int onnx_type = 0, ok = 0;
  memset(info, 0, sizeof *info);
  if (failed((output ? ort.SessionGetOutputName : ort.SessionGetInputName)(g->session, index, allocator, &name), "OrtApi::SessionGet*Name",
             err, err_len)) {
    return 0;
  }
  size_t length = strlen(name);
  if (length < sizeof info->name) memcpy(info->name, name, length + 1);
  else snprintf(err, err_len, "%s %u's name '%s' is longer than %zu bytes", kind, index, name, sizeof info->name - 1);
  failed(ort.AllocatorFree(allocator, name), "OrtApi::AllocatorFree", err, err_len);
  if (length >= sizeof info->name) return 0;
  if (failed((output ? ort.SessionGetOutputTypeInfo : ort.SessionGetInputTypeInfo)(g->session, index, &type_info),
             "OrtApi::SessionGet*TypeInfo", err, err_len)) {
    return 0;
  }
  if (failed(ort.CastTypeInfoToTensorInfo(type_info, &tensor), "OrtApi::CastTypeInfoToTensorInfo", err, err_len)) {
  } else if (!tensor) {
    snprintf(err, err_len, "%s '%s' is not a tensor", kind, info->name);
  } else if (!failed(ort.GetTensorElementType(tensor, &onnx_type), "OrtApi::GetTensorElementType", err, err_len) &&
             !failed(ort.GetDimensionsCount(tensor, &dim_count), "OrtApi::GetDimensionsCount", err, err_len)) {
    info->dtype = acl_type_of(onnx_type);
    if (info->dtype < 0) {
      snprintf(err, err_len, "%s '%s' has ONNX element type %d, which has no aclDataType in the simulation", kind, info->name, onnx_type);
    } else if (dim_count > SIM_ONNX_MAX_DIMS) {
      snprintf(err, err_len, "%s '%s' has %zu dims (at most %d)", kind, info->name, dim_count, SIM_ONNX_MAX_DIMS);
    } else if (!failed(ort.GetDimensions(tensor, info->dims, dim_count), "OrtApi::GetDimensions", err, err_len)) {
      info->dim_count = (uint32_t)dim_count;
      for (uint32_t d = 0; d < info->dim_count; d++) {
        if (info->dims[d] < 0) info->dims[d] = -1;
      }
      ok = 1;
    }
  }
  ort.ReleaseTypeInfo(type_info);
  return ok;
}

/* Frees a graph, including one that sim_onnx_open gave up on half-way (never counted in onnx_graphs). */
static void release_graph(struct sim_onnx *g) {
  if (g->session) ort.ReleaseSession(g->session);
  free(g);
}

SIM_API int sim_onnx_open(const void *bytes, size_t size, int fp16_compute, struct sim_onnx **out, char *err, size_t err_len) {
  if (!out) {
    snprintf(err, err_len, "sim_onnx_open: out is NULL");
    return -1;
  }
  *out = NULL;
  if (!bytes || size == 0) {
    snprintf(err, err_len, "sim_onnx_open: the ONNX model is empty");
    return -1;
  }
  if (!ensure_bound(err, err_len)) return -1;
  OrtSessionOptions *options = NULL;
  if (failed(ort.CreateSessionOptions(&options), "OrtApi::CreateSessionOptions", err, err_len)) return -1;
  struct sim_onnx *g = calloc(1, sizeof *g);
  g->fp16_compute = fp16_compute != 0;
  /* One intra-op thread: the simulation runs beside the tests on shared CPUs, and a device has its own cores. */
  int ok = !failed(ort.SetIntraOpNumThreads(options, 1), "OrtApi::SetIntraOpNumThreads", err, err_len) &&
           !failed(ort.CreateSessionFromArray(env, bytes, size, options, &g->session), "ONNX Runtime cannot load the graph", err, err_len);
  ort.ReleaseSessionOptions(options);
  size_t inputs = 0, outputs = 0;
  ok = ok && !failed(ort.SessionGetInputCount(g->session, &inputs), "OrtApi::SessionGetInputCount", err, err_len) &&
       !failed(ort.SessionGetOutputCount(g->session, &outputs), "OrtApi::SessionGetOutputCount", err, err_len);
  if (ok && (inputs > SIM_ONNX_MAX_IO || outputs > SIM_ONNX_MAX_IO)) {
    snprintf(err, err_len, "the graph has %zu inputs and %zu outputs (at most %d each)", inputs, outputs, SIM_ONNX_MAX_IO);
    ok = 0;
  }
  g->input_count = (uint32_t)inputs;
  g->output_count = (uint32_t)outputs;
  for (uint32_t i = 0; ok && i < g->input_count; i++) {
    ok = read_info(g, 0, i, &g->inputs[i], err, err_len);
    g->input_names[i] = g->inputs[i].name;
  }
  for (uint32_t i = 0; ok && i < g->output_count; i++) {
    ok = read_info(g, 1, i, &g->outputs[i], err, err_len);
    g->output_names[i] = g->outputs[i].name;
  }
  if (!ok) {
    release_graph(g);
    return -1;
  }
  sim_internal_count(SIM_ONNX_GRAPHS, 1);
  *out = g;
  return 0;
}

SIM_API uint32_t sim_onnx_input_count(const struct sim_onnx *g) { return g ? g->input_count : 0; }

SIM_API uint32_t sim_onnx_output_count(const struct sim_onnx *g) { return g ? g->output_count : 0; }

SIM_API void sim_onnx_input_info(const struct sim_onnx *g, uint32_t index, struct sim_onnx_tensor_info *info) {
  if (g && index < g->input_count) *info = g->inputs[index];
  else memset(info, 0, sizeof *info);
}

SIM_API void sim_onnx_output_info(const struct sim_onnx *g, uint32_t index, struct sim_onnx_tensor_info *info) {
  if (g && index < g->output_count) *info = g->outputs[index];
  else memset(info, 0, sizeof *info);
}

static uint64_t element_count(uint32_t dim_count, const int64_t *dims) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < dim_count; d++) n *= (uint64_t)dims[d];
  return n;
}

/* The caller's shape for input i, checked against the graph's dims (a symbolic dim takes any size). */
static int check_input_shape(const struct sim_onnx_tensor_info *info, uint32_t dim_count, const int64_t *dims, char *err, size_t err_len) {
  if (dim_count != info->dim_count) {
    snprintf(err, err_len, "input '%s' has %u dims, the graph declares %u", info->name, dim_count, info->dim_count);
    return 0;
  }
  for (uint32_t d = 0; d < dim_count; d++) {
    if (dims[d] < 0 || (info->dims[d] >= 0 && dims[d] != info->dims[d])) {
      snprintf(err, err_len, "input '%s' dim %u is %lld, the graph declares %lld", info->name, d, (long long)dims[d],
               (long long)info->dims[d]);
      return 0;
    }
  }
  return 1;
}

static int copy_output(const struct sim_onnx *g, OrtValue *value, uint32_t index, struct sim_onnx_result *result, char *err, size_t err_len) {
  OrtTensorTypeAndShapeInfo *shape = NULL;
  size_t dim_count = 0;
  int onnx_type = 0, ok = 0;
  void *data = NULL;
  if (failed(ort.GetTensorTypeAndShape(value, &shape), "OrtApi::GetTensorTypeAndShape", err, err_len)) return 0;
  if (!failed(ort.GetTensorElementType(shape, &onnx_type), "OrtApi::GetTensorElementType", err, err_len) &&
      !failed(ort.GetDimensionsCount(shape, &dim_count), "OrtApi::GetDimensionsCount", err, err_len)) {
    if (dim_count > SIM_ONNX_MAX_DIMS) {
      snprintf(err, err_len, "output '%s' came back with %zu dims (at most %d)", g->outputs[index].name, dim_count, SIM_ONNX_MAX_DIMS);
    } else if (!failed(ort.GetDimensions(shape, result->dims[index], dim_count), "OrtApi::GetDimensions", err, err_len) &&
               !failed(ort.GetTensorMutableData(value, &data), "OrtApi::GetTensorMutableData", err, err_len)) {
      uint64_t elements = element_count((uint32_t)dim_count, result->dims[index]);
      result->dtype[index] = acl_type_of(onnx_type);
      result->dim_count[index] = (uint32_t)dim_count;
      result->bytes[index] = (size_t)elements * sim_internal_dtype_size(result->dtype[index]);
      result->data[index] = malloc(result->bytes[index] ? result->bytes[index] : 1);
      memcpy(result->data[index], data, result->bytes[index]);
      if (g->fp16_compute && result->dtype[index] == ACL_FLOAT) round_floats(result->data[index], elements);
      ok = 1;
    }
  }
  ort.ReleaseTensorTypeAndShapeInfo(shape);
  return ok;
}

SIM_API int sim_onnx_run(struct sim_onnx *g, const void *const *inputs, const uint32_t *dim_counts, const int64_t (*dims)[SIM_ONNX_MAX_DIMS],
                         struct sim_onnx_result *result, char *err, size_t err_len) {
  OrtValue *in[SIM_ONNX_MAX_IO] = { 0 }, *out[SIM_ONNX_MAX_IO] = { 0 };
  float *rounded[SIM_ONNX_MAX_IO] = { 0 };
  if (!result) {
    snprintf(err, err_len, "sim_onnx_run: result is NULL");
    return -1;
  }
  memset(result, 0, sizeof *result);
  if (!g || (g->input_count && (!inputs || !dim_counts || !dims))) {
    snprintf(err, err_len, "sim_onnx_run: NULL graph, inputs or shapes");
    return -1;
  }
  int ok = 1;
  for (uint32_t i = 0; ok && i < g->input_count; i++) {
    const struct sim_onnx_tensor_info *info = &g->inputs[i];
    ok = check_input_shape(info, dim_counts[i], dims[i], err, err_len);
    if (!ok) break;
    uint64_t elements = element_count(dim_counts[i], dims[i]);
    size_t bytes = (size_t)elements * sim_internal_dtype_size(info->dtype);
    /* ORT does not write through an input's buffer; its API takes void * for both directions. */
    void *data = (void *)inputs[i];
    if (g->fp16_compute && info->dtype == ACL_FLOAT) {
      rounded[i] = malloc(bytes ? bytes : 1);
      memcpy(rounded[i], inputs[i], bytes);
      round_floats(rounded[i], elements);
      data = rounded[i];
    }
    ok = !failed(ort.CreateTensorWithDataAsOrtValue(cpu_memory, data, bytes, dims[i], dim_counts[i], onnx_type_of(info->dtype), &in[i]),
                 "OrtApi::CreateTensorWithDataAsOrtValue", err, err_len);
  }
  ok = ok && !failed(ort.Run(g->session, NULL, g->input_names, (const OrtValue *const *)in, g->input_count, g->output_names,
                             g->output_count, out),
                     "ONNX Runtime failed to run the graph", err, err_len);
  if (ok) result->count = g->output_count;
  for (uint32_t i = 0; ok && i < g->output_count; i++) ok = copy_output(g, out[i], i, result, err, err_len);
  for (uint32_t i = 0; i < SIM_ONNX_MAX_IO; i++) {
    if (in[i]) ort.ReleaseValue(in[i]);
    if (out[i]) ort.ReleaseValue(out[i]);
    free(rounded[i]);
  }
  if (!ok) sim_onnx_result_free(result);
  return ok ? 0 : -1;
}

SIM_API void sim_onnx_result_free(struct sim_onnx_result *result) {
  if (!result) return;
  for (uint32_t i = 0; i < SIM_ONNX_MAX_IO; i++) free(result->data[i]);
  memset(result, 0, sizeof *result);
}

SIM_API void sim_onnx_close(struct sim_onnx *g) {
  if (!g) return;
  release_graph(g);
  sim_internal_count(SIM_ONNX_GRAPHS, -1);
}
