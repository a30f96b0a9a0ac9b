/*
 * libgraph.so: ge::AscendString, ge::GetSizeInBytes and the Graph constructor, as declared in
 * hicann/metadef 8.5.0 inc/external/graph/{ascend_string.h, types.h} and graph.h.
 */
#include <cstring>
#include <functional>

#include "ge-sim-internal.h"

namespace ge {
AscendString::AscendString(const char_t *const name)
    : name_(name ? std::make_shared<std::string>(name) : nullptr) {}

AscendString::AscendString(const char_t *const name, size_t length)
    : name_(name ? std::make_shared<std::string>(name, length) : nullptr) {}

/* An AscendString built without a name reads as "", as the real one does. */
const char_t *AscendString::GetString() const { return name_ ? name_->c_str() : ""; }

size_t AscendString::GetLength() const { return name_ ? name_->size() : 0; }

size_t AscendString::Find(const AscendString &ascend_string) const {
  return std::string(GetString(), GetLength()).find(std::string(ascend_string.GetString(), ascend_string.GetLength()));
}

size_t AscendString::Hash() const { return std::hash<std::string>()(std::string(GetString(), GetLength())); }

static int Compare(const AscendString &a, const AscendString &b) {
  return std::string(a.GetString(), a.GetLength()).compare(std::string(b.GetString(), b.GetLength()));
}

bool AscendString::operator<(const AscendString &d) const { return Compare(*this, d) < 0; }
bool AscendString::operator>(const AscendString &d) const { return Compare(*this, d) > 0; }
bool AscendString::operator<=(const AscendString &d) const { return Compare(*this, d) <= 0; }
bool AscendString::operator>=(const AscendString &d) const { return Compare(*this, d) >= 0; }
bool AscendString::operator==(const AscendString &d) const { return Compare(*this, d) == 0; }
bool AscendString::operator!=(const AscendString &d) const { return Compare(*this, d) != 0; }
bool AscendString::operator==(const char_t *const d) const { return *this == AscendString(d); }
bool AscendString::operator!=(const char_t *const d) const { return *this != AscendString(d); }

int64_t GetSizeInBytes(int64_t element_count, DataType data_type) {
  if (element_count < 0) return -1;
  int64_t width;
  switch (data_type) {
    case DT_INT8: case DT_UINT8: case DT_BOOL: width = 1; break;
    case DT_FLOAT16: case DT_INT16: case DT_UINT16: case DT_BF16: width = 2; break;
    case DT_FLOAT: case DT_INT32: case DT_UINT32: width = 4; break;
    case DT_INT64: case DT_UINT64: case DT_DOUBLE: width = 8; break;
    default: return -1;
  }
  return element_count * width;
}

/* A named graph that holds no model yet: a parser fills it, AddGraph refuses it until then. */
Graph::Graph(const char_t *name) : impl_(std::make_shared<GraphImpl>()) { impl_->name = name ? name : ""; }
}  // namespace ge
