/*
 * Our transcription of gert::Tensor and its parts from hicann/metadef branch 8.5.0,
 * inc/external/exe_graph/runtime/{shape.h, storage_shape.h, expand_dims_type.h, storage_format.h,
 * tensor_data.h, tensor.h}. Everything there is inline, so only the data layout has to match the
 * real one: ExecuteGraphWithStreamAsync receives the caller's std::vector<gert::Tensor>. The member
 * functions are the subset the simulation calls, written for it; the static_asserts pin the layout.
 * This transcription is independent of the addon's (native/src/ge-api.h) on purpose: the addon
 * linking and running against these libraries cross-checks both against the CANN headers.
 */
#ifndef SERVE_FN_GE_SIM_EXE_GRAPH_H
#define SERVE_FN_GE_SIM_EXE_GRAPH_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ge-sim-graph.h"

namespace gert {
struct Shape {
 public:
  static constexpr size_t kMaxDimNum = 25;
  Shape() : dim_num_(0), dims_{0} { memset(reserved_, 0, sizeof(reserved_)); }
  Shape(const Shape &other) : dim_num_(other.dim_num_) {
    memcpy(dims_, other.dims_, sizeof(dims_));
    memset(reserved_, 0, sizeof(reserved_));
  }
  Shape &operator=(const Shape &other) {
    dim_num_ = other.dim_num_;
    memcpy(dims_, other.dims_, sizeof(dims_));
    return *this;
  }
  size_t GetDimNum() const { return dim_num_; }
  int64_t GetDim(size_t idx) const { return idx < dim_num_ ? dims_[idx] : INT64_MIN; }
  void SetDimNum(size_t dim_num) { dim_num_ = dim_num; }
  void SetDim(size_t idx, int64_t dim_value) {
    if (idx < kMaxDimNum) dims_[idx] = dim_value;
  }
  /* Product of the dims (1 for a scalar); -1 when a dim is negative. */
  int64_t GetShapeSize() const {
    int64_t size = 1;
    for (size_t i = 0; i < dim_num_; ++i) {
      if (dims_[i] < 0) return -1;
      size *= dims_[i];
    }
    return size;
  }

 private:
  size_t dim_num_;
  int64_t dims_[kMaxDimNum];
  uint8_t reserved_[40];
};
static_assert(std::is_standard_layout<Shape>::value, "gert::Shape is standard layout");
static_assert(sizeof(Shape) == 248, "gert::Shape layout (8.5.0)");

struct StorageShape {
 public:
  StorageShape() { memset(reserved_, 0, sizeof(reserved_)); }
  const Shape &GetOriginShape() const { return origin_shape_; }
  const Shape &GetStorageShape() const { return storage_shape_; }
  Shape &MutableOriginShape() { return origin_shape_; }
  Shape &MutableStorageShape() { return storage_shape_; }

 private:
  Shape origin_shape_;
  Shape storage_shape_;
  uint8_t reserved_[40];
};
static_assert(std::is_standard_layout<StorageShape>::value, "gert::StorageShape is standard layout");

class ExpandDimsType {
 public:
  ExpandDimsType() : size_(0U), mask_(0U) { memset(reserved_, 0, sizeof(reserved_)); }

 private:
  uint64_t size_ : 8;
  uint64_t mask_ : 56;
  uint8_t reserved_[40];
};

struct StorageFormat {
 public:
  StorageFormat() : origin_format_(ge::FORMAT_ND), storage_format_(ge::FORMAT_ND) { memset(reserved_, 0, sizeof(reserved_)); }

 private:
  ge::Format origin_format_;
  ge::Format storage_format_;
  ExpandDimsType expand_dims_type_;
  uint8_t reserved_[40];
};
static_assert(std::is_standard_layout<StorageFormat>::value, "gert::StorageFormat is standard layout");

enum TensorPlacement : int32_t { kOnDeviceHbm, kOnHost, kFollowing, kOnDeviceP2p, kTensorPlacementEnd };
enum TensorOperateType : int32_t { kGetTensorAddress, kFreeTensor, kPlusShareCount, kTensorOperateType };
using TensorAddress = void *;
using TensorAddrManager = ge::graphStatus (*)(TensorAddress addr, TensorOperateType operate_type, void **out);

/* Owns addr_ when manager_ is set: the destructor hands it back with kFreeTensor, as the real one does. */
class TensorData {
 public:
  explicit TensorData(TensorAddress addr = nullptr, const TensorAddrManager manager = nullptr)
      : TensorData(addr, manager, 0U, kTensorPlacementEnd) {}
  explicit TensorData(TensorAddress addr, const TensorAddrManager manager, size_t size, TensorPlacement placement)
      : addr_(addr), manager_(manager), size_(size), placement_(placement), reserved_0_(0U) {
    memset(reserved_1_, 0, sizeof(reserved_1_));
  }
  TensorData(const TensorData &) = delete;
  TensorData &operator=(const TensorData &) = delete;
  TensorData(TensorData &&other) noexcept
      : addr_(other.addr_), manager_(other.manager_), size_(other.size_), placement_(other.placement_), reserved_0_(0U) {
    memset(reserved_1_, 0, sizeof(reserved_1_));
    other.Forget();
  }
  TensorData &operator=(TensorData &&other) noexcept {
    if (this != &other) {
      Free();
      addr_ = other.addr_;
      manager_ = other.manager_;
      size_ = other.size_;
      placement_ = other.placement_;
      other.Forget();
    }
    return *this;
  }
  ~TensorData() noexcept { Free(); }
  TensorAddress GetAddr() const {
    if (manager_ == nullptr || addr_ == nullptr) return addr_;
    TensorAddress addr = nullptr;
    return manager_(addr_, kGetTensorAddress, &addr) == ge::GRAPH_SUCCESS ? addr : nullptr;
  }
  TensorPlacement GetPlacement() const { return placement_; }
  ge::graphStatus Free() {
    ge::graphStatus status = ge::GRAPH_SUCCESS;
    if (manager_ != nullptr) status = manager_(addr_, kFreeTensor, nullptr);
    Forget();
    return status;
  }

 private:
  void Forget() {
    addr_ = nullptr;
    manager_ = nullptr;
    size_ = 0U;
    placement_ = kTensorPlacementEnd;
  }
  TensorAddress addr_;
  TensorAddrManager manager_;
  size_t size_;
  TensorPlacement placement_;
  uint32_t reserved_0_;
  uint8_t reserved_1_[40];
};
static_assert(sizeof(TensorData) == 72, "gert::TensorData layout (8.5.0)");

enum TensorVersion : uint8_t { kTensorV1 = 0, kTensorV2 = 1 };

class Tensor {
 public:
  Tensor() : version_(kTensorV1), data_type_(ge::DT_UNDEFINED) {
    memset(reserved_, 0, sizeof(reserved_));
    memset(reserved_field_, 0, sizeof(reserved_field_));
  }
  /* The real constructor sizes the data with the exported ge::GetSizeInBytes, so this one does too. */
  Tensor(const StorageShape &storage_shape, const StorageFormat &storage_format, const TensorPlacement placement,
         const ge::DataType data_type, TensorAddress addr, TensorAddrManager manager)
      : storage_shape_(storage_shape), storage_format_(storage_format), version_(kTensorV1), data_type_(data_type),
        tensor_data_(addr, manager, static_cast<size_t>(ge::GetSizeInBytes(GetShapeSize(), data_type_)), placement) {
    memset(reserved_, 0, sizeof(reserved_));
    memset(reserved_field_, 0, sizeof(reserved_field_));
  }
  int64_t GetShapeSize() const { return storage_shape_.GetStorageShape().GetShapeSize(); }
  ge::DataType GetDataType() const { return data_type_; }
  const void *GetAddr() const { return tensor_data_.GetAddr(); }
  TensorPlacement GetPlacement() const { return tensor_data_.GetPlacement(); }
  const TensorData &GetTensorData() const { return tensor_data_; }
  const Shape &GetOriginShape() const { return storage_shape_.GetOriginShape(); }
  const Shape &GetStorageShape() const { return storage_shape_.GetStorageShape(); }
  Shape &MutableOriginShape() { return storage_shape_.MutableOriginShape(); }
  Shape &MutableStorageShape() { return storage_shape_.MutableStorageShape(); }

 private:
  StorageShape storage_shape_;
  StorageFormat storage_format_;
  TensorVersion version_;
  uint8_t reserved_[3];
  ge::DataType data_type_;
  TensorData tensor_data_;
  uint8_t reserved_field_[40];
  friend struct TensorLayout;
};

/* The offsets the addon's own transcription must agree with (it reads the same vectors). */
struct TensorLayout {
  static constexpr size_t kDataType = offsetof(Tensor, data_type_);
  static constexpr size_t kTensorData = offsetof(Tensor, tensor_data_);
};
static_assert(std::is_standard_layout<Tensor>::value, "gert::Tensor is standard layout");
static_assert(sizeof(Tensor) == 752, "gert::Tensor layout (8.5.0)");
static_assert(TensorLayout::kDataType == 636, "gert::Tensor::data_type_ offset (8.5.0)");
static_assert(TensorLayout::kTensorData == 640, "gert::Tensor::tensor_data_ offset (8.5.0)");
}  // namespace gert

#endif
