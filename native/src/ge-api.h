// The GE (graph engine) subset the GE route calls, transcribed from the public CANN 8.5.0 headers
// so the addon builds without them; the libraries are linked at build time (binding.gyp,
// target serve_fn_npu_ge), because these entry points are C++ with standard-library types.
// Sources (branch 8.5.0):
//   hicann/ge      inc/external/ge/ge_api.h, inc/external/ge/ge_ir_build.h,
//                  inc/parser/external/parser/onnx_parser.h, inc/graph_metadef/external/graph/graph.h
//   hicann/metadef inc/external/graph/{ascend_string.h, types.h, ge_error_codes.h},
//                  inc/external/exe_graph/runtime/{tensor.h, tensor_data.h, shape.h, storage_shape.h,
//                  storage_format.h, expand_dims_type.h}
// Layouts and signatures must match those headers exactly: the mangled names and the object
// layouts are the ABI. Of the inline members, only those the addon calls are transcribed. Only the AscendString overloads are declared (the std::string ones are
// deprecated and would tie us to the old-ABI std::string). CANN is built with
// _GLIBCXX_USE_CXX11_ABI=0, and so is every file of this target.
// The simulated libraries' test/native/sim-ge/ge-sim-*.h transcribe the same headers again on
// purpose, independently of this file: the addon linking and running against them cross-checks both.
#ifndef SERVE_FN_NPU_GE_API_H
#define SERVE_FN_NPU_GE_API_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

// The headers mark these GE_FUNC_VISIBILITY (default visibility); this target compiles with
// -fvisibility=hidden, which would otherwise hide the classes' out-of-line members.
#pragma GCC visibility push(default)

namespace ge {

// The release whose headers this file transcribes (reported by geInfo()).
constexpr const char *kHeadersVersion = "CANN 8.5.0";

using char_t = char;
using Status = uint32_t;       // ge_api_error_codes.h
using graphStatus = uint32_t;  // graph/ge_error_codes.h
constexpr graphStatus GRAPH_SUCCESS = 0;

// graph/types.h: the codes equal aclDataType's (c_types.h). Only the ones the addon names.
enum DataType {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT32 = 8,
  DT_INT64 = 9,
  DT_UINT64 = 10,
  DT_DOUBLE = 11,
  DT_BOOL = 12,
  DT_BF16 = 27,
};

enum Format { FORMAT_ND = 2 };

// graph/types.h, exported by libgraph.so; gert::Tensor's inline constructor calls it.
int64_t GetSizeInBytes(int64_t element_count, DataType data_type);

// graph/ascend_string.h: one shared_ptr; everything used here is out of line (libgraph.so).
class AscendString {
 public:
  AscendString() = default;
  ~AscendString() = default;
  AscendString(const char_t *const name);
  const char_t *GetString() const;
  bool operator<(const AscendString &d) const;

 private:
  std::shared_ptr<std::string> name_;
};

using Options = std::map<AscendString, AscendString>;

class GraphImpl;

// graph/graph.h: one shared_ptr to the implementation; default constructor and destructor inline.
class Graph {
 public:
  Graph() = default;
  ~Graph() = default;

 private:
  std::shared_ptr<GraphImpl> impl_{nullptr};
};

// ge/ge_ir_build.h. The header's length is uint64_t (the API page shows uint32_t; the header wins).
struct ModelBufferData {
  std::shared_ptr<uint8_t> data = nullptr;
  uint64_t length;
};

}  // namespace ge

namespace gert {

// exe_graph/runtime/tensor_data.h
enum TensorPlacement : int32_t { kOnDeviceHbm, kOnHost, kFollowing, kOnDeviceP2p, kTensorPlacementEnd };
enum TensorOperateType : int32_t { kGetTensorAddress, kFreeTensor, kPlusShareCount, kTensorOperateType };
using TensorAddress = void *;
using TensorAddrManager = ge::graphStatus (*)(TensorAddress addr, TensorOperateType operate_type, void **out);

// exe_graph/runtime/shape.h
struct Shape {
 public:
  static constexpr size_t kMaxDimNum = 25;
  Shape() : dim_num_(0), dims_{0} { std::memset(reserved_, 0, sizeof(reserved_)); }
  Shape(const Shape &other) : dim_num_(other.dim_num_) {
    for (size_t i = 0; i < dim_num_; ++i) dims_[i] = other.dims_[i];
    std::memset(reserved_, 0, sizeof(reserved_));
  }
  Shape &operator=(const Shape &other) {
    if (&other != this) {
      dim_num_ = other.dim_num_;
      for (size_t i = 0; i < dim_num_; ++i) dims_[i] = other.dims_[i];
    }
    std::memset(reserved_, 0, sizeof(reserved_));
    return *this;
  }
  size_t GetDimNum() const { return dim_num_; }
  int64_t GetDim(size_t idx) const { return idx < kMaxDimNum ? dims_[idx] : INT64_MIN; }
  // The header checks the product for overflow (ge::MulOverflow); callers here validate dims first.
  int64_t GetShapeSize() const {
    int64_t size = 1;
    for (size_t i = 0; i < dim_num_; ++i) size *= dims_[i];
    return size;
  }
  Shape &AppendDim(int64_t value) {
    if (dim_num_ < kMaxDimNum) dims_[dim_num_++] = value;
    return *this;
  }

 private:
  size_t dim_num_;
  int64_t dims_[kMaxDimNum];
  uint8_t reserved_[40];
};

// exe_graph/runtime/storage_shape.h
struct StorageShape {
 public:
  StorageShape() { std::memset(reserved_, 0, sizeof(reserved_)); }
  const Shape &GetStorageShape() const { return storage_shape_; }
  Shape &MutableOriginShape() { return origin_shape_; }
  Shape &MutableStorageShape() { return storage_shape_; }

 private:
  Shape origin_shape_;
  Shape storage_shape_;
  uint8_t reserved_[40];
};

// exe_graph/runtime/expand_dims_type.h
class ExpandDimsType {
 public:
  ExpandDimsType() : size_(0U), mask_(0U) { std::memset(reserved_, 0, sizeof(reserved_)); }

 private:
  uint64_t size_ : 8;
  uint64_t mask_ : 56;
  uint8_t reserved_[40];
};

// exe_graph/runtime/storage_format.h
struct StorageFormat {
 public:
  StorageFormat() { std::memset(reserved_, 0, sizeof(reserved_)); }
  StorageFormat(ge::Format origin_format, ge::Format storage_format, const ExpandDimsType &expand_dims_type)
      : origin_format_(origin_format), storage_format_(storage_format), expand_dims_type_(expand_dims_type) {
    std::memset(reserved_, 0, sizeof(reserved_));
  }

 private:
  ge::Format origin_format_;
  ge::Format storage_format_;
  ExpandDimsType expand_dims_type_;
  uint8_t reserved_[40];
};

// exe_graph/runtime/tensor_data.h: owns addr_ when manager_ is set (GE-allocated outputs), and
// frees it through the manager on destruction; that is how an output is "cleared".
class TensorData {
 public:
  explicit TensorData(TensorAddress addr, const TensorAddrManager manager, size_t size, TensorPlacement placement)
      : addr_(addr), manager_(manager), size_(size), placement_(placement), reserved_0_(0U) {
    std::memset(reserved_1_, 0, sizeof(reserved_1_));
  }
  TensorData(const TensorData &) = delete;
  TensorData(TensorData &&other) noexcept
      : addr_(other.addr_), manager_(other.manager_), size_(other.size_), placement_(other.placement_) {
    other.addr_ = nullptr;
    other.manager_ = nullptr;
    other.size_ = 0U;
    other.placement_ = kTensorPlacementEnd;
    reserved_0_ = other.reserved_0_;
    std::memcpy(reserved_1_, other.reserved_1_, sizeof(reserved_1_));
  }
  TensorData &operator=(const TensorData &) = delete;
  TensorData &operator=(TensorData &&other) noexcept {
    if (this != &other) {
      static_cast<void>(Free());
      addr_ = other.addr_;
      manager_ = other.manager_;
      size_ = other.size_;
      placement_ = other.placement_;
      other.addr_ = nullptr;
      other.manager_ = nullptr;
      other.size_ = 0U;
      other.placement_ = kTensorPlacementEnd;
      reserved_0_ = other.reserved_0_;
      std::memcpy(reserved_1_, other.reserved_1_, sizeof(reserved_1_));
    }
    return *this;
  }
  ~TensorData() noexcept { static_cast<void>(Free()); }
  TensorAddress GetAddr() const {
    if (manager_ == nullptr || addr_ == nullptr) return addr_;
    TensorAddress addr;
    return manager_(addr_, kGetTensorAddress, &addr) == ge::GRAPH_SUCCESS ? addr : nullptr;
  }
  size_t GetSize() const { return size_; }
  ge::graphStatus Free() {
    if (manager_ == nullptr) return ge::GRAPH_SUCCESS;
    const ge::graphStatus ret = manager_(addr_, kFreeTensor, nullptr);
    if (ret == ge::GRAPH_SUCCESS) {
      addr_ = nullptr;
      manager_ = nullptr;
    }
    return ret;
  }

 private:
  TensorAddress addr_;
  TensorAddrManager manager_;
  size_t size_;
  TensorPlacement placement_;
  uint32_t reserved_0_;
  uint8_t reserved_1_[40];
};

enum TensorVersion : uint8_t { kTensorV1 = 0, kTensorV2 = 1 };

// exe_graph/runtime/tensor.h
class Tensor {
 public:
  Tensor(const StorageShape &storage_shape, const StorageFormat &storage_format, const TensorPlacement placement,
         const ge::DataType data_type, TensorAddress addr)
      : Tensor(storage_shape, storage_format, placement, data_type, addr, nullptr) {}
  Tensor(const StorageShape &storage_shape, const StorageFormat &storage_format, const TensorPlacement placement,
         const ge::DataType data_type, TensorAddress addr, TensorAddrManager manager)
      : storage_shape_(storage_shape),
        storage_format_(storage_format),
        version_(kTensorV1),
        data_type_(data_type),
        tensor_data_(addr, manager, static_cast<size_t>(ge::GetSizeInBytes(GetShapeSize(), data_type_)), placement) {
    std::memset(reserved_, 0, sizeof(reserved_));
    std::memset(reserved_field_, 0, sizeof(reserved_field_));
  }
  int64_t GetShapeSize() const { return storage_shape_.GetStorageShape().GetShapeSize(); }
  const void *GetAddr() const { return tensor_data_.GetAddr(); }
  size_t GetSize() const { return tensor_data_.GetSize(); }
  const Shape &GetStorageShape() const { return storage_shape_.GetStorageShape(); }

 private:
  StorageShape storage_shape_;
  StorageFormat storage_format_;
  TensorVersion version_;
  uint8_t reserved_[3];
  ge::DataType data_type_;
  TensorData tensor_data_;
  uint8_t reserved_field_[40];
};

static_assert(std::is_standard_layout<Tensor>::value, "gert::Tensor is standard layout in tensor.h");
static_assert(sizeof(Shape) == 248 && sizeof(StorageShape) == 536 && sizeof(StorageFormat) == 96 &&
                  sizeof(TensorData) == 72 && sizeof(Tensor) == 752,
              "the gert layouts of the CANN 8.5.0 headers (LP64)");

}  // namespace gert

namespace ge {

// ge/ge_api.h (libge_runner.so)
Status GEInitialize(const Options &options);
Status GEFinalize();
AscendString GEGetErrorMsgV2();

class Session {
 public:
  explicit Session(const Options &options);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  Status AddGraph(uint32_t graph_id, const Graph &graph, const Options &options);
  Status RemoveGraph(uint32_t graph_id);
  Status CompileGraph(uint32_t graph_id);
  Status LoadGraph(const uint32_t graph_id, const Options &options, void *stream) const;
  Status ExecuteGraphWithStreamAsync(uint32_t graph_id, void *stream, const std::vector<gert::Tensor> &inputs,
                                     std::vector<gert::Tensor> &outputs);

 private:
  uint64_t sessionId_{0};
};

// parser/onnx_parser.h (libfmk_onnx_parser.so)
graphStatus aclgrphParseONNX(const char *model_file, const Options &parser_params, Graph &graph);
graphStatus aclgrphParseONNXFromMem(const char *buffer, size_t size, const Options &parser_params, Graph &graph);

// ge/ge_ir_build.h (libge_compiler.so)
graphStatus aclgrphBuildInitialize(Options &global_options);
void aclgrphBuildFinalize();
graphStatus aclgrphBuildModel(const Graph &graph, const Options &build_options, ModelBufferData &model);
graphStatus aclgrphSaveModel(const char_t *output_file, const ModelBufferData &model);

}  // namespace ge

#pragma GCC visibility pop

#endif
