// gguf/tensor_info.cpp — tensor shape validation and sizing (overflow-checked).
#include "gguf/tensor_info.h"

#include <limits>

#include "core/error.h"

namespace squeeze::gguf {

bool is_valid_alignment(uint64_t alignment) {
  return alignment != 0 && alignment <= kMaxAlignment && (alignment & (alignment - 1)) == 0;
}

std::optional<uint64_t> align_up(uint64_t x, uint64_t alignment) {
  const uint64_t mask = alignment - 1;
  if (x > std::numeric_limits<uint64_t>::max() - mask) return std::nullopt;
  return (x + mask) & ~mask;
}

TensorGeometry tensor_geometry(uint32_t type_id, std::span<const uint64_t> dims) {
  const auto info = ggml_type_info(type_id);
  SQZ_CHECK(info.has_value(), "unknown ggml type id ", type_id);
  SQZ_CHECK(dims.size() <= kMaxDims, "has ", dims.size(), " dimensions (at most ", kMaxDims, " allowed)");
  TensorGeometry g;
  g.type = info->type;
  g.n_dims = static_cast<int>(dims.size());
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    SQZ_CHECK(dims[i] != 0, "dimension ", i, " is 0");
    SQZ_CHECK(dims[i] <= kMax, "dimension ", i, " (", dims[i], ") exceeds 2^63-1");
    SQZ_CHECK(count <= kMax / dims[i], "element count overflows: dimension ", i, " (", dims[i],
              ") times the preceding ", count, " elements exceeds 2^63-1");
    count *= dims[i];
    g.ne[i] = static_cast<int64_t>(dims[i]);
  }
  g.n_elements = static_cast<int64_t>(count);
  const auto bs = static_cast<uint64_t>(info->block_size);
  const auto bb = static_cast<uint64_t>(info->block_bytes);
  SQZ_CHECK(static_cast<uint64_t>(g.ne[0]) % bs == 0, "row length ", g.ne[0], " is not a multiple of the ",
            info->name, " block size ", bs);
  const uint64_t blocks = count / bs;
  SQZ_CHECK(blocks <= kMax / bb, "byte size overflows: ", blocks, " blocks of ", bb, " bytes exceed 2^63-1");
  g.n_bytes = blocks * bb;
  return g;
}

TensorGeometry tensor_geometry(GgmlType type, std::span<const int64_t> dims) {
  SQZ_CHECK(dims.size() <= kMaxDims, "has ", dims.size(), " dimensions (at most ", kMaxDims, " allowed)");
  std::array<uint64_t, kMaxDims> u{};
  for (size_t i = 0; i < dims.size(); ++i) {
    SQZ_CHECK(dims[i] > 0, "dimension ", i, " is ", dims[i], " (must be positive)");
    u[i] = static_cast<uint64_t>(dims[i]);
  }
  return tensor_geometry(static_cast<uint32_t>(type), std::span<const uint64_t>(u.data(), dims.size()));
}

std::span<const uint8_t> TensorInfo::row(int64_t r) const {
  SQZ_CHECK(r >= 0 && r < n_rows(), "tensor '", name, "': row ", r, " out of range [0, ", n_rows(), ")");
  const uint64_t rb = row_bytes();
  SQZ_CHECK(data.size() == n_bytes, "tensor '", name, "' has no data attached");
  return data.subspan(static_cast<size_t>(r) * rb, rb);
}

std::string TensorInfo::shape_string() const {
  std::string out = "[";
  for (int i = 0; i < n_dims; ++i) {
    if (i) out += ", ";
    out += std::to_string(ne[i]);
  }
  return out + "]";
}

}  // namespace squeeze::gguf
