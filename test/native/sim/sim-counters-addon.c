/*
 * Test-only Node addon that reads the simulated AscendCL's counters. It attaches (RTLD_NOLOAD) to
 * the copy of the library the serve-fn addon already loaded, so both see the same process state;
 * plain C against node_api.h keeps it a single gcc command (build-sim.ts), without node-gyp.
 *
 *   counter(libraryFile: string, name: string): number   -- throws for an unknown counter
 *   resetPeaks(libraryFile: string): void
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>

typedef int64_t (*counter_fn)(const char *);
typedef void (*reset_fn)(void);

static void *attach(napi_env env, napi_value path_value, const char *symbol) {
  char path[4096];
  size_t length = 0;
  if (napi_get_value_string_utf8(env, path_value, path, sizeof path, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "libraryFile must be a string");
    return NULL;
  }
  void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) {
    char message[4200];
    snprintf(message, sizeof message, "%s is not loaded in this process yet (load a model through the addon first)", path);
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  void *fn = dlsym(handle, symbol);
  dlclose(handle);
  if (!fn) napi_throw_error(env, NULL, "the loaded library is not the serve-fn AscendCL simulation (no sim_* exports)");
  return fn;
}

static napi_value counter(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  counter_fn fn = argc == 2 ? (counter_fn)attach(env, argv[0], "sim_counter") : NULL;
  if (!fn) {
    if (argc != 2) napi_throw_type_error(env, NULL, "counter(libraryFile, name)");
    return NULL;
  }
  char name[128];
  size_t length = 0;
  if (napi_get_value_string_utf8(env, argv[1], name, sizeof name, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "name must be a string");
    return NULL;
  }
  int64_t value = fn(name);
  if (value < 0) {
    char message[200];
    snprintf(message, sizeof message, "the simulation has no counter named '%s'", name);
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  napi_value result;
  napi_create_int64(env, value, &result);
  return result;
}

static napi_value reset_peaks(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  reset_fn fn = argc == 1 ? (reset_fn)attach(env, argv[0], "sim_reset_peaks") : NULL;
  if (fn) fn();
  else if (argc != 1) napi_throw_type_error(env, NULL, "resetPeaks(libraryFile)");
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "counter", NAPI_AUTO_LENGTH, counter, NULL, &fn);
  napi_set_named_property(env, exports, "counter", fn);
  napi_create_function(env, "resetPeaks", NAPI_AUTO_LENGTH, reset_peaks, NULL, &fn);
  napi_set_named_property(env, exports, "resetPeaks", fn);
  return exports;
}
