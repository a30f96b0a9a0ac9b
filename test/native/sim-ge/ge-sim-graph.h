/*
 * Our transcription of the CANN 8.5.0 graph declarations that serve-fn uses, written from the
 * public headers (hicann/metadef branch 8.5.0: inc/external/graph/{types.h, c_types.h,
 * ascend_string.h, ge_error_codes.h}; hicann/ge branch 8.5.0: inc/graph_metadef/external/graph/graph.h).
 * Namespaces, class names, member types and const-ness follow those headers exactly, because the
 * mangled names of what libgraph.so exports come from them. Only the subset serve-fn calls is here.
 * This transcription is independent of the addon's (native/src/ge-api.h) on purpose: the addon
 * linking and running against these libraries cross-checks both against the CANN headers.
 */
#ifndef SERVE_FN_GE_SIM_GRAPH_H
#define SERVE_FN_GE_SIM_GRAPH_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#define GE_SIM_EXPORT __attribute__((visibility("default")))

namespace ge {
using char_t = char;

/* graph/ge_error_codes.h */
using graphStatus = uint32_t;
const graphStatus GRAPH_FAILED = 0xFFFFFFFF;
const graphStatus GRAPH_SUCCESS = 0;
const graphStatus GRAPH_PARAM_INVALID = 50331649;

/* graph/types.h: the codes are the C_DataType ones of graph/c_types.h (equal to aclDataType). */
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
  DT_STRING = 13,
  DT_BF16 = 27,
  DT_UNDEFINED = 28,
};

/* graph/types.h (C_Format of graph/c_types.h): only ND is used by serve-fn. */
enum Format {
  FORMAT_NCHW = 0,
  FORMAT_NHWC = 1,
  FORMAT_ND = 2,
};

/* graph/types.h: bytes of element_count elements; -1 for a negative count or a type without a fixed size. */
GE_SIM_EXPORT int64_t GetSizeInBytes(int64_t element_count, DataType data_type);

/* graph/ascend_string.h */
class AscendStringImpl;
class GE_SIM_EXPORT AscendString {
 public:
  AscendString() = default;
  ~AscendString() = default;
  AscendString(const char_t *const name);
  AscendString(const char_t *const name, size_t length);
  const char_t *GetString() const;
  size_t GetLength() const;
  size_t Find(const AscendString &ascend_string) const;
  size_t Hash() const;
  bool operator<(const AscendString &d) const;
  bool operator>(const AscendString &d) const;
  bool operator<=(const AscendString &d) const;
  bool operator>=(const AscendString &d) const;
  bool operator==(const AscendString &d) const;
  bool operator!=(const AscendString &d) const;
  bool operator==(const char_t *const d) const;
  bool operator!=(const char_t *const d) const;

 private:
  std::shared_ptr<std::string> name_;
  friend class AscendStringImpl;
};

/* graph/graph.h: a Graph is one shared pointer to its implementation, reached by friends. */
class GraphImpl;
using GraphImplPtr = std::shared_ptr<GraphImpl>;
class GE_SIM_EXPORT Graph {
  friend class GraphUtils;
  friend class GraphUtilsEx;

 public:
  explicit Graph(const char_t *name);
  Graph() = default;
  ~Graph() = default;

 private:
  GraphImplPtr impl_{nullptr};
};
}  // namespace ge

#endif
