#include "loaded-model.h"

#include <cstring>

LoadedModel::LoadedModel(std::unique_ptr<DeviceRuntime> runtime) : runtime_(std::move(runtime)) {}

LoadedModel::~LoadedModel() { Unload(); }

NpuStatus LoadedModel::Load(std::unique_ptr<DeviceRuntime> runtime, const ModelSource &source, std::unique_ptr<LoadedModel> *out) {
  std::unique_ptr<LoadedModel> model(new LoadedModel(std::move(runtime)));
  const AclApi &api = model->runtime_->api();
  NpuStatus status = model->runtime_->MakeCurrent();
  if (status.ok) {
    status = source.file.empty() ? ACL_CALL(api, aclmdlLoadFromMem, (source.bytes.data(), source.bytes.size(), &model->modelId_))
                                 : ACL_CALL(api, aclmdlLoadFromFile, (source.file.c_str(), &model->modelId_));
  }
  model->modelLoaded_ = status.ok;
  if (status.ok && !(model->desc_ = api.aclmdlCreateDesc())) status = NpuStatus::Failure("aclmdlCreateDesc returned NULL");
  if (status.ok) status = ACL_CALL(api, aclmdlGetDesc, (model->desc_, model->modelId_));
  if (status.ok) status = DescribeModel(api, model->desc_, &model->description_);
  if (status.ok) status = model->AllocateAll();
  if (status.ok) *out = std::move(model);
  return status;
}

NpuStatus LoadedModel::Allocate(aclmdlDataset *dataset, size_t size, bool staging, std::vector<IoBuffer> *buffers) {
  const AclApi &api = runtime_->api();
  buffers->emplace_back();
  IoBuffer &buffer = buffers->back();
  buffer.size = size;
  NpuStatus status = ACL_CALL(api, aclrtMalloc, (&buffer.device, size, ACL_MEM_MALLOC_HUGE_FIRST));
  if (status.ok && staging) status = ACL_CALL(api, aclrtMallocHost, (&buffer.host, size));
  if (status.ok && !(buffer.dataBuffer = api.aclCreateDataBuffer(buffer.device, size))) {
    status = NpuStatus::Failure("aclCreateDataBuffer returned NULL");
  }
  if (status.ok) status = ACL_CALL(api, aclmdlAddDatasetBuffer, (dataset, buffer.dataBuffer));
  return status;
}

NpuStatus LoadedModel::AllocateAll() {
  const AclApi &api = runtime_->api();
  if (!(inputSet_ = api.aclmdlCreateDataset()) || !(outputSet_ = api.aclmdlCreateDataset())) {
    return NpuStatus::Failure("aclmdlCreateDataset returned NULL");
  }
  // Dataset buffers must be added in ACL index order, the dynamic-batch input at its own index.
  for (size_t i = 0; i < description_.aclInputCount; i++) {
    bool dynamicInput = description_.dynamic() && i == description_.dynamicInputIndex;
    NpuStatus status = Allocate(inputSet_, api.aclmdlGetInputSizeByIndex(desc_, i), !dynamicInput, &inputBuffers_);
    if (!status.ok) return status;
  }
  for (const TensorInfo &output : description_.outputs) {
    NpuStatus status = Allocate(outputSet_, output.byteSize, true, &outputBuffers_);
    if (!status.ok) return status;
  }
  return NpuStatus::Ok();
}

NpuStatus LoadedModel::Run(const ExecuteRequest &request, uint64_t gear, std::vector<size_t> *outputSizes) {
  const AclApi &api = runtime_->api();
  aclrtStream stream = runtime_->stream();
  for (size_t i = 0; i < description_.inputs.size(); i++) {
    const TensorInfo &info = description_.inputs[i];
    IoBuffer &buffer = inputBuffers_[info.aclIndex];
    const auto &input = request.inputs[i];
    size_t bytes = gear ? gear * info.bytesPerSample : info.byteSize;
    std::memcpy(buffer.host, input.first, input.second);
    std::memset(static_cast<uint8_t *>(buffer.host) + input.second, 0, bytes - input.second);
    NpuStatus status =
        ACL_CALL(api, aclrtMemcpyAsync, (buffer.device, buffer.size, buffer.host, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    if (!status.ok) return status;
  }
  if (gear) {
    NpuStatus status = ACL_CALL(api, aclmdlSetDynamicBatchSize, (modelId_, inputSet_, description_.dynamicInputIndex, gear));
    if (!status.ok) return status;
  }
  NpuStatus status = ACL_CALL(api, aclmdlExecuteAsync, (modelId_, inputSet_, outputSet_, stream));
  for (size_t i = 0; status.ok && i < description_.outputs.size(); i++) {
    const TensorInfo &info = description_.outputs[i];
    size_t bytes = gear ? request.batch * info.bytesPerSample : info.byteSize;
    IoBuffer &buffer = outputBuffers_[i];
    status = ACL_CALL(api, aclrtMemcpyAsync, (buffer.host, buffer.size, buffer.device, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    outputSizes->push_back(bytes);
  }
  return status;
}

NpuStatus LoadedModel::Execute(const ExecuteRequest &request, std::vector<OutputBytes> *outputs) {
  if (!loaded()) return NpuStatus::Failure("the model has been unloaded");
  NpuStatus status = runtime_->MakeCurrent();
  if (!status.ok) return status;
  uint64_t gear = description_.dynamic() ? description_.GearFor(request.batch) : 0;
  std::vector<size_t> outputSizes;
  status = Run(request, gear, &outputSizes);
  // Always drain the stream, so no copy still in flight touches the staging buffers afterwards.
  NpuStatus drained = ACL_CALL(runtime_->api(), aclrtSynchronizeStream, (runtime_->stream()));
  if (!status.ok) return status;
  if (!drained.ok) return drained;
  for (size_t i = 0; i < outputSizes.size(); i++) {
    OutputBytes output;
    output.size = outputSizes[i];
    output.data.reset(new uint8_t[output.size]);
    std::memcpy(output.data.get(), outputBuffers_[i].host, output.size);
    outputs->push_back(std::move(output));
  }
  return NpuStatus::Ok();
}

NpuStatus LoadedModel::Unload() {
  if (!runtime_) return NpuStatus::Ok();
  const AclApi &api = runtime_->api();
  NpuStatus first = runtime_->MakeCurrent();
  for (auto *buffers : {&inputBuffers_, &outputBuffers_}) {
    for (IoBuffer &buffer : *buffers) {
      if (buffer.dataBuffer) KeepFirstFailure(&first, ACL_CALL(api, aclDestroyDataBuffer, (buffer.dataBuffer)));
      if (buffer.device) KeepFirstFailure(&first, ACL_CALL(api, aclrtFree, (buffer.device)));
      if (buffer.host) KeepFirstFailure(&first, ACL_CALL(api, aclrtFreeHost, (buffer.host)));
    }
    buffers->clear();
  }
  if (inputSet_) KeepFirstFailure(&first, ACL_CALL(api, aclmdlDestroyDataset, (inputSet_)));
  if (outputSet_) KeepFirstFailure(&first, ACL_CALL(api, aclmdlDestroyDataset, (outputSet_)));
  if (modelLoaded_) KeepFirstFailure(&first, ACL_CALL(api, aclmdlUnload, (modelId_)));
  if (desc_) KeepFirstFailure(&first, ACL_CALL(api, aclmdlDestroyDesc, (desc_)));
  inputSet_ = outputSet_ = nullptr;
  desc_ = nullptr;
  modelLoaded_ = false;
  KeepFirstFailure(&first, runtime_->Release());
  runtime_.reset();
  return first;
}
