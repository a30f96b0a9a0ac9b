/*
 * Simulated AscendCL: devices, contexts (current per thread) and streams. Stream work runs
 * eagerly when it is enqueued, so aclrtSynchronizeStream only validates its argument.
 */
#include <pthread.h>
#include <stdlib.h>

#include "acl-sim.h"

#define SIM_MAX_DEVICES 8
#define SIM_MAX_HANDLES 512
#define CONTEXT_MAGIC 0xC0A7E47u
#define STREAM_MAGIC 0x57AEA3u

size_t sim_memory_used(int32_t device);

struct sim_stream {
  uint32_t magic;
  struct sim_context *ctx;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int32_t device_count = 2;
static size_t device_memory = (size_t)1024 * 1024 * 1024;
static int device_refs[SIM_MAX_DEVICES];
static struct sim_context *default_contexts[SIM_MAX_DEVICES];
static void *contexts[SIM_MAX_HANDLES];
static void *streams[SIM_MAX_HANDLES];
static __thread struct sim_context *current;

static int set_add(void **set, void *item) {
  for (int i = 0; i < SIM_MAX_HANDLES; i++) {
    if (!set[i]) {
      set[i] = item;
      return 1;
    }
  }
  return 0;
}

static int set_remove(void **set, const void *item) {
  for (int i = 0; i < SIM_MAX_HANDLES; i++) {
    if (item && set[i] == item) {
      set[i] = NULL;
      return 1;
    }
  }
  return 0;
}

static int set_has(void *const *set, const void *item) {
  for (int i = 0; i < SIM_MAX_HANDLES; i++) {
    if (item && set[i] == item) return 1;
  }
  return 0;
}

void sim_device_configure(void) {
  const char *count = getenv("ACL_SIM_DEVICE_COUNT");
  const char *megabytes = getenv("ACL_SIM_DEVICE_MEMORY_MB");
  if (count) device_count = atoi(count) < 0 ? 0 : atoi(count) > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : atoi(count);
  if (megabytes) device_memory = (size_t)strtoull(megabytes, NULL, 10) * 1024 * 1024;
}

size_t sim_device_memory_total(void) { return device_memory; }

static void make_current(struct sim_context *ctx) {
  if (current != ctx) sim_internal_count(SIM_CONTEXT_SWITCHES, 1);
  current = ctx;
}

int sim_internal_context_alive(const struct sim_context *ctx) {
  pthread_mutex_lock(&lock);
  int alive = set_has(contexts, ctx);
  pthread_mutex_unlock(&lock);
  return alive;
}

struct sim_context *sim_internal_current_context(void) {
  return current && sim_internal_context_alive(current) ? current : NULL;
}

static struct sim_context *stream_context(aclrtStream stream) {
  pthread_mutex_lock(&lock);
  struct sim_context *ctx = set_has(streams, stream) ? ((struct sim_stream *)stream)->ctx : NULL;
  pthread_mutex_unlock(&lock);
  return ctx;
}

static aclError check_device(const char *fn, int32_t device) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", fn);
  if (device < 0 || device >= device_count) {
    return sim_internal_fail(ACL_ERROR_RT_INVALID_DEVICEID, "%s: device %d does not exist (%d simulated devices)", fn, device, device_count);
  }
  return ACL_SUCCESS;
}

static struct sim_context *new_context(int32_t device, int is_default) {
  struct sim_context *ctx = calloc(1, sizeof *ctx);
  ctx->magic = CONTEXT_MAGIC;
  ctx->device = device;
  ctx->is_default = is_default;
  set_add(contexts, ctx);
  return ctx;
}

SIM_API aclError aclrtGetDeviceCount(uint32_t *count) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "aclrtGetDeviceCount: aclInit has not been called");
  if (!count) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is NULL");
  *count = (uint32_t)device_count;
  return ACL_SUCCESS;
}

SIM_API aclError aclrtSetDevice(int32_t device) {
  aclError rc = check_device("aclrtSetDevice", device);
  if (rc != ACL_SUCCESS) return rc;
  pthread_mutex_lock(&lock);
  if (device_refs[device]++ == 0) default_contexts[device] = new_context(device, 1);
  struct sim_context *ctx = default_contexts[device];
  pthread_mutex_unlock(&lock);
  sim_internal_count(SIM_DEVICES_SET, 1);
  make_current(ctx);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtResetDevice(int32_t device) {
  aclError rc = check_device("aclrtResetDevice", device);
  if (rc != ACL_SUCCESS) return rc;
  pthread_mutex_lock(&lock);
  if (device_refs[device] == 0) {
    pthread_mutex_unlock(&lock);
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtResetDevice: device %d was not set", device);
  }
  struct sim_context *gone = NULL;
  if (--device_refs[device] == 0) {
    gone = default_contexts[device];
    set_remove(contexts, gone);
    default_contexts[device] = NULL;
  }
  pthread_mutex_unlock(&lock);
  sim_internal_count(SIM_DEVICES_SET, -1);
  if (gone && current == gone) current = NULL;
  free(gone);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtCreateContext(aclrtContext *out, int32_t device) {
  aclError rc = check_device("aclrtCreateContext", device);
  if (rc != ACL_SUCCESS) return rc;
  if (!out) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is NULL");
  pthread_mutex_lock(&lock);
  struct sim_context *ctx = new_context(device, 0);
  pthread_mutex_unlock(&lock);
  sim_internal_count(SIM_CONTEXTS, 1);
  make_current(ctx);
  *out = ctx;
  return ACL_SUCCESS;
}

SIM_API aclError aclrtDestroyContext(aclrtContext handle) {
  struct sim_context *ctx = handle;
  pthread_mutex_lock(&lock);
  aclError rc = ACL_SUCCESS;
  int open_streams = 0;
  for (int i = 0; i < SIM_MAX_HANDLES; i++) open_streams += streams[i] && ((struct sim_stream *)streams[i])->ctx == ctx;
  if (!set_has(contexts, ctx)) rc = sim_internal_fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "aclrtDestroyContext: unknown context %p", handle);
  else if (ctx->is_default) rc = sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: the default context cannot be destroyed");
  else if (open_streams) rc = sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: %d streams of this context are not destroyed", open_streams);
  else set_remove(contexts, ctx);
  pthread_mutex_unlock(&lock);
  if (rc != ACL_SUCCESS) return rc;
  if (current == ctx) current = NULL;
  free(ctx);
  sim_internal_count(SIM_CONTEXTS, -1);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtSetCurrentContext(aclrtContext handle) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "aclrtSetCurrentContext: aclInit has not been called");
  if (!sim_internal_context_alive(handle)) {
    return sim_internal_fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "aclrtSetCurrentContext: unknown context %p", handle);
  }
  make_current(handle);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtGetCurrentContext(aclrtContext *out) {
  struct sim_context *ctx = sim_internal_current_context();
  if (!out) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is NULL");
  if (!ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext: no context is current on this thread");
  *out = ctx;
  return ACL_SUCCESS;
}

SIM_API aclError aclrtCreateStream(aclrtStream *out) {
  struct sim_context *ctx = sim_internal_current_context();
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "aclrtCreateStream: aclInit has not been called");
  if (!out) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
  if (!ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtCreateStream: no context is current on this thread");
  struct sim_stream *stream = calloc(1, sizeof *stream);
  stream->magic = STREAM_MAGIC;
  stream->ctx = ctx;
  pthread_mutex_lock(&lock);
  set_add(streams, stream);
  pthread_mutex_unlock(&lock);
  sim_internal_count(SIM_STREAMS, 1);
  *out = stream;
  return ACL_SUCCESS;
}

aclError sim_internal_check_stream(const char *fn, aclrtStream stream) {
  struct sim_context *ctx = sim_internal_current_context();
  struct sim_context *owner = stream_context(stream);
  if (!owner) return sim_internal_fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "%s: unknown stream %p", fn, stream);
  if (!ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: no context is current on this thread", fn);
  if (owner != ctx) return sim_internal_fail(ACL_ERROR_RT_STREAM_CONTEXT, "%s: the stream belongs to another context", fn);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtDestroyStream(aclrtStream stream) {
  aclError rc = sim_internal_check_stream("aclrtDestroyStream", stream);
  if (rc != ACL_SUCCESS) return rc;
  pthread_mutex_lock(&lock);
  set_remove(streams, stream);
  pthread_mutex_unlock(&lock);
  free(stream);
  sim_internal_count(SIM_STREAMS, -1);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtSynchronizeStream(aclrtStream stream) { return sim_internal_check_stream("aclrtSynchronizeStream", stream); }

SIM_API aclError aclrtGetMemInfo(int attr, size_t *free_bytes, size_t *total_bytes) {
  (void)attr;
  struct sim_context *ctx = sim_internal_current_context();
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "aclrtGetMemInfo: aclInit has not been called");
  if (!free_bytes || !total_bytes) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: NULL argument");
  if (!ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetMemInfo: no device is set on this thread");
  *total_bytes = device_memory;
  *free_bytes = device_memory - sim_memory_used(ctx->device);
  return ACL_SUCCESS;
}
