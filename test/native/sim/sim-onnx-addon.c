/*
 * Test-only Node addon that drives the simulated ONNX runner (sim-onnx.h) of a given library file
 * (libascendcl.so or libacl_rt.so), so sim-onnx.test.ts checks the C interface itself. Plain C
 * against node_api.h, built by build-sim.ts like sim-counters.node.
 *
 *   open(libraryFile, onnx: Uint8Array, fp16Compute: boolean): { graph, inputs, outputs }
 *       inputs/outputs: { name, dataType, dims }[]; throws the runner's error text
 *   run(graph, inputs: { data: ArrayBufferView, dims: number[] }[]): { data: ArrayBuffer, dataType, dims }[]
 *   close(graph): void
 *   encodeOm(libraryFile, onnx: Uint8Array, gears: number[], fp16Compute: boolean): Uint8Array
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-onnx.h"

struct runner {
  int (*open)(const void *, size_t, int, struct sim_onnx **, char *, size_t);
  uint32_t (*input_count)(const struct sim_onnx *);
  uint32_t (*output_count)(const struct sim_onnx *);
  void (*input_info)(const struct sim_onnx *, uint32_t, struct sim_onnx_tensor_info *);
  void (*output_info)(const struct sim_onnx *, uint32_t, struct sim_onnx_tensor_info *);
  int (*run)(struct sim_onnx *, const void *const *, const uint32_t *, const int64_t (*)[SIM_ONNX_MAX_DIMS], struct sim_onnx_result *,
             char *, size_t);
  void (*result_free)(struct sim_onnx_result *);
  void (*close)(struct sim_onnx *);
  int (*encode)(const void *, size_t, const uint64_t *, uint32_t, int, uint8_t **, size_t *, char *, size_t);
};

struct graph {
  struct runner runner;
  struct sim_onnx *onnx;
};

#define CHECK(call)                                  \
  do {                                               \
    if ((call) != napi_ok) {                         \
      napi_throw_error(env, NULL, "N-API: " #call); \
      return NULL;                                   \
    }                                                \
  } while (0)

static int bind_runner(napi_env env, napi_value path_value, struct runner *r) {
  char path[4096], message[4300];
  size_t length = 0;
  if (napi_get_value_string_utf8(env, path_value, path, sizeof path, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "libraryFile must be a string");
    return 0;
  }
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    snprintf(message, sizeof message, "cannot load %s: %s", path, dlerror());
    napi_throw_error(env, NULL, message);
    return 0;
  }
  void **slots[] = { (void **)&r->open, (void **)&r->input_count, (void **)&r->output_count, (void **)&r->input_info,
                     (void **)&r->output_info, (void **)&r->run, (void **)&r->result_free, (void **)&r->close, (void **)&r->encode };
  const char *names[] = { "sim_onnx_open", "sim_onnx_input_count", "sim_onnx_output_count", "sim_onnx_input_info", "sim_onnx_output_info",
                          "sim_onnx_run", "sim_onnx_result_free", "sim_onnx_close", "sim_om_encode_onnx" };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    *slots[i] = dlsym(library, names[i]);
    if (!*slots[i]) {
      snprintf(message, sizeof message, "%s does not export %s", path, names[i]);
      napi_throw_error(env, NULL, message);
      return 0;
    }
  }
  return 1;
}

static napi_value dims_array(napi_env env, uint32_t count, const int64_t *dims) {
  napi_value array, value;
  CHECK(napi_create_array_with_length(env, count, &array));
  for (uint32_t d = 0; d < count; d++) {
    CHECK(napi_create_int64(env, dims[d], &value));
    CHECK(napi_set_element(env, array, d, value));
  }
  return array;
}

static napi_value info_array(napi_env env, const struct graph *g, int outputs) {
  uint32_t count = outputs ? g->runner.output_count(g->onnx) : g->runner.input_count(g->onnx);
  napi_value array, item, value;
  CHECK(napi_create_array_with_length(env, count, &array));
  for (uint32_t i = 0; i < count; i++) {
    struct sim_onnx_tensor_info info;
    (outputs ? g->runner.output_info : g->runner.input_info)(g->onnx, i, &info);
    CHECK(napi_create_object(env, &item));
    CHECK(napi_create_string_utf8(env, info.name, NAPI_AUTO_LENGTH, &value));
    CHECK(napi_set_named_property(env, item, "name", value));
    CHECK(napi_create_int32(env, info.dtype, &value));
    CHECK(napi_set_named_property(env, item, "dataType", value));
    CHECK(napi_set_named_property(env, item, "dims", dims_array(env, info.dim_count, info.dims)));
    CHECK(napi_set_element(env, array, i, item));
  }
  return array;
}

static int get_bytes(napi_env env, napi_value value, void **data, size_t *size) {
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  napi_value buffer;
  if (napi_get_typedarray_info(env, value, &type, &length, data, &buffer, &offset) != napi_ok) {
    napi_throw_type_error(env, NULL, "expected a typed array");
    return 0;
  }
  size_t element = type == napi_uint8_array || type == napi_int8_array || type == napi_uint8_clamped_array ? 1
                   : type == napi_int16_array || type == napi_uint16_array                                 ? 2
                   : type == napi_float64_array || type == napi_bigint64_array || type == napi_biguint64_array ? 8
                                                                                                             : 4;
  *size = length * element;
  return 1;
}

static void finalize_graph(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  struct graph *g = data;
  if (g->onnx) g->runner.close(g->onnx);
  free(g);
}

static napi_value open_graph(napi_env env, napi_callback_info cb) {
  size_t argc = 3;
  napi_value argv[3], result, external;
  CHECK(napi_get_cb_info(env, cb, &argc, argv, NULL, NULL));
  struct graph *g = calloc(1, sizeof *g);
  void *bytes = NULL;
  size_t size = 0;
  bool fp16 = false;
  char err[1024] = "";
  if (argc != 3 || !bind_runner(env, argv[0], &g->runner) || !get_bytes(env, argv[1], &bytes, &size) ||
      napi_get_value_bool(env, argv[2], &fp16) != napi_ok) {
    free(g);
    return NULL;
  }
  if (g->runner.open(bytes, size, fp16, &g->onnx, err, sizeof err) != 0) {
    free(g);
    napi_throw_error(env, NULL, err);
    return NULL;
  }
  CHECK(napi_create_external(env, g, finalize_graph, NULL, &external));
  CHECK(napi_create_object(env, &result));
  CHECK(napi_set_named_property(env, result, "graph", external));
  CHECK(napi_set_named_property(env, result, "inputs", info_array(env, g, 0)));
  CHECK(napi_set_named_property(env, result, "outputs", info_array(env, g, 1)));
  return result;
}

static struct graph *graph_of(napi_env env, napi_value value) {
  struct graph *g = NULL;
  if (napi_get_value_external(env, value, (void **)&g) != napi_ok || !g || !g->onnx) {
    napi_throw_error(env, NULL, "not an open graph");
    return NULL;
  }
  return g;
}

static napi_value run_graph(napi_env env, napi_callback_info cb) {
  size_t argc = 2;
  napi_value argv[2], item, value, output, buffer;
  CHECK(napi_get_cb_info(env, cb, &argc, argv, NULL, NULL));
  struct graph *g = argc == 2 ? graph_of(env, argv[0]) : NULL;
  if (!g) return NULL;
  uint32_t count = 0;
  CHECK(napi_get_array_length(env, argv[1], &count));
  if (count > SIM_ONNX_MAX_IO) {
    napi_throw_range_error(env, NULL, "too many inputs");
    return NULL;
  }
  const void *inputs[SIM_ONNX_MAX_IO] = { 0 };
  uint32_t dim_counts[SIM_ONNX_MAX_IO] = { 0 };
  int64_t dims[SIM_ONNX_MAX_IO][SIM_ONNX_MAX_DIMS] = { { 0 } };
  for (uint32_t i = 0; i < count; i++) {
    size_t size = 0;
    void *data = NULL;
    CHECK(napi_get_element(env, argv[1], i, &item));
    CHECK(napi_get_named_property(env, item, "data", &value));
    if (!get_bytes(env, value, &data, &size)) return NULL;
    inputs[i] = data;
    CHECK(napi_get_named_property(env, item, "dims", &value));
    CHECK(napi_get_array_length(env, value, &dim_counts[i]));
    for (uint32_t d = 0; d < dim_counts[i] && d < SIM_ONNX_MAX_DIMS; d++) {
      napi_value dim;
      CHECK(napi_get_element(env, value, d, &dim));
      CHECK(napi_get_value_int64(env, dim, &dims[i][d]));
    }
  }
  struct sim_onnx_result result;
  char err[1024] = "";
  if (g->runner.run(g->onnx, inputs, dim_counts, (const int64_t(*)[SIM_ONNX_MAX_DIMS])dims, &result, err, sizeof err) != 0) {
    napi_throw_error(env, NULL, err);
    return NULL;
  }
  CHECK(napi_create_array_with_length(env, result.count, &output));
  for (uint32_t i = 0; i < result.count; i++) {
    void *copy = NULL;
    CHECK(napi_create_arraybuffer(env, result.bytes[i], &copy, &buffer));
    memcpy(copy, result.data[i], result.bytes[i]);
    CHECK(napi_create_object(env, &item));
    CHECK(napi_set_named_property(env, item, "data", buffer));
    CHECK(napi_create_int32(env, result.dtype[i], &value));
    CHECK(napi_set_named_property(env, item, "dataType", value));
    CHECK(napi_set_named_property(env, item, "dims", dims_array(env, result.dim_count[i], result.dims[i])));
    CHECK(napi_set_element(env, output, i, item));
  }
  g->runner.result_free(&result);
  return output;
}

static napi_value close_graph(napi_env env, napi_callback_info cb) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, cb, &argc, argv, NULL, NULL));
  struct graph *g = argc == 1 ? graph_of(env, argv[0]) : NULL;
  if (g) {
    g->runner.close(g->onnx);
    g->onnx = NULL;
  }
  return NULL;
}

static napi_value encode_om(napi_env env, napi_callback_info cb) {
  size_t argc = 4;
  napi_value argv[4], gear, result;
  CHECK(napi_get_cb_info(env, cb, &argc, argv, NULL, NULL));
  struct runner runner;
  void *bytes = NULL;
  size_t size = 0;
  bool fp16 = false;
  uint32_t gear_count = 0;
  if (argc != 4 || !bind_runner(env, argv[0], &runner) || !get_bytes(env, argv[1], &bytes, &size)) return NULL;
  CHECK(napi_get_array_length(env, argv[2], &gear_count));
  CHECK(napi_get_value_bool(env, argv[3], &fp16));
  uint64_t *gears = calloc(gear_count ? gear_count : 1, sizeof *gears);
  for (uint32_t i = 0; i < gear_count; i++) {
    int64_t value = 0;
    CHECK(napi_get_element(env, argv[2], i, &gear));
    if (napi_get_value_int64(env, gear, &value) != napi_ok) value = 0;
    gears[i] = (uint64_t)value;
  }
  uint8_t *image = NULL;
  size_t image_size = 0;
  char err[1024] = "";
  int rc = runner.encode(bytes, size, gears, gear_count, fp16, &image, &image_size, err, sizeof err);
  free(gears);
  if (rc != 0) {
    napi_throw_error(env, NULL, err);
    return NULL;
  }
  void *copy = NULL;
  CHECK(napi_create_buffer_copy(env, image_size, image, &copy, &result));
  free(image);
  return result;
}

NAPI_MODULE_INIT() {
  const struct {
    const char *name;
    napi_callback fn;
  } methods[] = { { "open", open_graph }, { "run", run_graph }, { "close", close_graph }, { "encodeOm", encode_om } };
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
    napi_value fn;
    napi_create_function(env, methods[i].name, NAPI_AUTO_LENGTH, methods[i].fn, NULL, &fn);
    napi_set_named_property(env, exports, methods[i].name, fn);
  }
  return exports;
}
