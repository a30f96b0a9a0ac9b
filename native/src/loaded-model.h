// An OM model loaded in its own DeviceRuntime, with its device buffers (allocated once, reused by
// every execution) and pinned host staging buffers. Not thread-safe: OmModel runs one operation
// at a time per model, on libuv pool threads.
#ifndef SERVE_FN_NPU_LOADED_MODEL_H
#define SERVE_FN_NPU_LOADED_MODEL_H

#include <memory>
#include <string>
#include <vector>

#include "device-runtime.h"
#include "model-description.h"
#include "output-bytes.h"

struct ModelSource {
  std::string file;            // loaded with aclmdlLoadFromFile when not empty
  std::vector<uint8_t> bytes;  // otherwise with aclmdlLoadFromMem
};

struct ExecuteRequest {
  uint64_t batch = 0;  // rows of every input; ignored by static models
  std::vector<std::pair<const uint8_t *, size_t>> inputs;
};

class LoadedModel {
 public:
  static NpuStatus Load(std::unique_ptr<DeviceRuntime> runtime, const ModelSource &source, std::unique_ptr<LoadedModel> *out);

  ~LoadedModel();
  LoadedModel(const LoadedModel &) = delete;
  LoadedModel &operator=(const LoadedModel &) = delete;

  const ModelDescription &description() const { return description_; }
  bool loaded() const { return runtime_ != nullptr; }

  // Pads the batch up to the nearest gear, runs, and trims outputs back to request.batch rows.
  NpuStatus Execute(const ExecuteRequest &request, std::vector<OutputBytes> *outputs);
  // Frees buffers, unloads, destroys the description and releases the runtime; idempotent.
  NpuStatus Unload();

 private:
  struct IoBuffer {
    void *device = nullptr;
    void *host = nullptr;  // pinned staging copy; none for the dynamic-batch input
    size_t size = 0;
    aclDataBuffer *dataBuffer = nullptr;
  };

  explicit LoadedModel(std::unique_ptr<DeviceRuntime> runtime);
  NpuStatus Allocate(aclmdlDataset *dataset, size_t size, bool staging, std::vector<IoBuffer> *buffers);
  NpuStatus AllocateAll();
  NpuStatus Run(const ExecuteRequest &request, uint64_t gear, std::vector<size_t> *outputSizes);

  std::unique_ptr<DeviceRuntime> runtime_;
  uint32_t modelId_ = 0;
  bool modelLoaded_ = false;
  aclmdlDesc *desc_ = nullptr;
  aclmdlDataset *inputSet_ = nullptr;
  aclmdlDataset *outputSet_ = nullptr;
  std::vector<IoBuffer> inputBuffers_;  // by ACL input index, the dynamic-batch input included
  std::vector<IoBuffer> outputBuffers_;
  ModelDescription description_;
};

#endif
