/*
 * Simulated AscendCL: "device" memory is host memory recorded in a registry, so copies and model
 * buffers can be checked (right device, big enough) and leaks show up in the counters.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acl-sim.h"

#define HOST_MEMORY (-1)

size_t sim_device_memory_total(void);

struct allocation {
  char *base;
  size_t size;
  int32_t device;
  struct allocation *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct allocation *allocations;
static size_t used[8];

static struct allocation *find(const void *ptr) {
  for (struct allocation *a = allocations; a; a = a->next) {
    if ((const char *)ptr >= a->base && (const char *)ptr < a->base + a->size) return a;
  }
  return NULL;
}

size_t sim_memory_used(int32_t device) {
  pthread_mutex_lock(&lock);
  size_t bytes = device >= 0 && device < 8 ? used[device] : 0;
  pthread_mutex_unlock(&lock);
  return bytes;
}

size_t sim_internal_device_span(const void *ptr, int32_t device) {
  pthread_mutex_lock(&lock);
  struct allocation *a = find(ptr);
  size_t span = a && a->device == device ? (size_t)(a->base + a->size - (const char *)ptr) : 0;
  pthread_mutex_unlock(&lock);
  return span;
}

static aclError checked_context(const char *fn, struct sim_context **ctx) {
  if (!sim_internal_initialized()) return sim_internal_fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", fn);
  *ctx = sim_internal_current_context();
  if (!*ctx) return sim_internal_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: no context is current on this thread", fn);
  return ACL_SUCCESS;
}

static aclError allocate(const char *fn, void **out, size_t size, int32_t device) {
  if (!out || size == 0) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: size must be > 0 and the pointer non-NULL", fn);
  void *base = NULL;
  if (posix_memalign(&base, 64, size) != 0) return sim_internal_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", fn);
  struct allocation *a = malloc(sizeof *a);
  *a = (struct allocation){ base, size, device, NULL };
  pthread_mutex_lock(&lock);
  a->next = allocations;
  allocations = a;
  if (device >= 0) used[device] += size;
  pthread_mutex_unlock(&lock);
  *out = base;
  return ACL_SUCCESS;
}

static aclError release(const char *fn, void *ptr, int device_memory) {
  pthread_mutex_lock(&lock);
  struct allocation **link = &allocations;
  while (*link && !((*link)->base == ptr && ((*link)->device >= 0) == device_memory)) link = &(*link)->next;
  struct allocation *a = *link;
  if (a) {
    *link = a->next;
    if (a->device >= 0) used[a->device] -= a->size;
  }
  pthread_mutex_unlock(&lock);
  if (!a) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: %p was not returned by the matching allocation call", fn, ptr);
  if (device_memory) sim_internal_count(SIM_DEVICE_BYTES, -(int64_t)a->size);
  free(a->base);
  free(a);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtMalloc(void **out, size_t size, int policy) {
  (void)policy;
  struct sim_context *ctx;
  aclError rc = checked_context("aclrtMalloc", &ctx);
  if (rc != ACL_SUCCESS) return rc;
  if (sim_memory_used(ctx->device) + size > sim_device_memory_total()) {
    return sim_internal_fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc: %zu bytes do not fit on device %d", size, ctx->device);
  }
  rc = allocate("aclrtMalloc", out, size, ctx->device);
  if (rc != ACL_SUCCESS) return rc;
  sim_internal_count(SIM_DEVICE_ALLOCS, 1);
  sim_internal_count(SIM_DEVICE_BYTES, (int64_t)size);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtFree(void *ptr) {
  struct sim_context *ctx;
  aclError rc = checked_context("aclrtFree", &ctx);
  if (rc == ACL_SUCCESS) rc = release("aclrtFree", ptr, 1);
  if (rc == ACL_SUCCESS) sim_internal_count(SIM_DEVICE_ALLOCS, -1);
  return rc;
}

SIM_API aclError aclrtMallocHost(void **out, size_t size) {
  struct sim_context *ctx;
  aclError rc = checked_context("aclrtMallocHost", &ctx);
  if (rc == ACL_SUCCESS) rc = allocate("aclrtMallocHost", out, size, HOST_MEMORY);
  if (rc == ACL_SUCCESS) sim_internal_count(SIM_HOST_ALLOCS, 1);
  return rc;
}

SIM_API aclError aclrtFreeHost(void *ptr) {
  struct sim_context *ctx;
  aclError rc = checked_context("aclrtFreeHost", &ctx);
  if (rc == ACL_SUCCESS) rc = release("aclrtFreeHost", ptr, 0);
  if (rc == ACL_SUCCESS) sim_internal_count(SIM_HOST_ALLOCS, -1);
  return rc;
}

static aclError copy(const char *fn, void *dst, size_t dest_max, const void *src, size_t count, int kind) {
  struct sim_context *ctx;
  aclError rc = checked_context(fn, &ctx);
  if (rc != ACL_SUCCESS) return rc;
  if (!dst || !src) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: NULL pointer", fn);
  if (count > dest_max) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds destMax %zu", fn, count, dest_max);
  int dst_device = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  int src_device = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEVICE_TO_DEVICE) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: unsupported copy kind %d", fn, kind);
  }
  if (dst_device && sim_internal_device_span(dst, ctx->device) < count) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: destination is not %zu bytes of device %d memory", fn, count, ctx->device);
  }
  if (src_device && sim_internal_device_span(src, ctx->device) < count) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: source is not %zu bytes of device %d memory", fn, count, ctx->device);
  }
  if ((!dst_device && sim_internal_device_span(dst, ctx->device)) || (!src_device && sim_internal_device_span(src, ctx->device))) {
    return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "%s: copy kind %d does not match the pointers", fn, kind);
  }
  memcpy(dst, src, count);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtMemcpy(void *dst, size_t dest_max, const void *src, size_t count, int kind) {
  return copy("aclrtMemcpy", dst, dest_max, src, count, kind);
}

SIM_API aclError aclrtMemcpyAsync(void *dst, size_t dest_max, const void *src, size_t count, int kind, aclrtStream stream) {
  aclError rc = sim_internal_check_stream("aclrtMemcpyAsync", stream);
  return rc != ACL_SUCCESS ? rc : copy("aclrtMemcpyAsync", dst, dest_max, src, count, kind);
}

SIM_API aclDataBuffer *aclCreateDataBuffer(void *data, size_t size) {
  aclDataBuffer *buffer = malloc(sizeof *buffer);
  *buffer = (aclDataBuffer){ data, size };
  sim_internal_count(SIM_DATA_BUFFERS, 1);
  return buffer;
}

SIM_API aclError aclDestroyDataBuffer(const aclDataBuffer *buffer) {
  if (!buffer) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclDestroyDataBuffer: buffer is NULL");
  free((void *)buffer);
  sim_internal_count(SIM_DATA_BUFFERS, -1);
  return ACL_SUCCESS;
}

SIM_API void *aclGetDataBufferAddr(const aclDataBuffer *buffer) { return buffer ? buffer->data : NULL; }

SIM_API size_t aclGetDataBufferSizeV2(const aclDataBuffer *buffer) { return buffer ? buffer->size : 0; }

SIM_API aclError aclUpdateDataBuffer(aclDataBuffer *buffer, void *data, size_t size) {
  if (!buffer) return sim_internal_fail(ACL_ERROR_INVALID_PARAM, "aclUpdateDataBuffer: buffer is NULL");
  *buffer = (aclDataBuffer){ data, size };
  return ACL_SUCCESS;
}
