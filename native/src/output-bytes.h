// An output copied back from the device, by either route (OM or GE), and how it reaches JS: the
// ArrayBuffer takes the bytes over, without another copy, and frees them when collected.
#ifndef SERVE_FN_NPU_OUTPUT_BYTES_H
#define SERVE_FN_NPU_OUTPUT_BYTES_H

#include <napi.h>

#include <cstdint>
#include <memory>

struct OutputBytes {
  std::unique_ptr<uint8_t[]> data;
  size_t size = 0;
};

inline Napi::ArrayBuffer TakeArrayBuffer(Napi::Env env, OutputBytes *output) {
  uint8_t *data = output->data.release();
  return Napi::ArrayBuffer::New(env, data, output->size, [](Napi::Env, void *bytes) { delete[] static_cast<uint8_t *>(bytes); });
}

#endif
