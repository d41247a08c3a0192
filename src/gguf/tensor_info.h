// gguf/tensor_info.h — a tensor as a GGUF file describes it: name, ggml type, dims
// (ne[0] = row length, the fastest-varying dimension, first), byte size, and — for a
// file being read — the zero-copy span of its bytes inside the mapping.
// Also the shape validation both reader and writer apply (tensor_geometry).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"

namespace squeeze::gguf {

inline constexpr int kMaxDims = 4;               // GGML_MAX_DIMS
inline constexpr uint32_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
inline constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;  // sanity cap: keeps padding math far from overflow
// The least general.alignment a file may declare. Tensors are used in place (mmap), so
// their data must be aligned for the kernels' element loads (f32, and the f16/f32 scales
// inside quant blocks: 4 bytes) and, to keep 32-byte vector loads within cache lines,
// to 32; every GGUF writer we know writes at least GGUF's default of 32.
inline constexpr uint64_t kMinAlignment = 32;

// A validated shape: type known, 0..4 dims each ≥ 1, element count and byte size
// fitting in 63 bits, row length a multiple of the type's block size.
struct TensorGeometry {
  GgmlType type = GgmlType::F32;
  int n_dims = 0;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // unused trailing dims are 1
  int64_t n_elements = 1;
  uint64_t n_bytes = 0;
};

// Validates and sizes a tensor shape. Throws squeeze::Error with a one-line reason
// ("dimension 1 is 0", "row length 48 is not a multiple of the Q4_K block size 256", ...).
TensorGeometry tensor_geometry(uint32_t type_id, std::span<const uint64_t> dims);
TensorGeometry tensor_geometry(GgmlType type, std::span<const int64_t> dims);

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  int n_dims = 0;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  int64_t n_elements = 1;
  uint64_t n_bytes = 0;
  uint64_t offset = 0;               // from the start of the data section
  std::span<const uint8_t> data;     // the tensor's bytes (reader: inside the mapping)

  GgmlTypeInfo type_info() const { return ggml_type_info(type); }
  int64_t row_length() const { return ne[0]; }
  int64_t n_rows() const { return n_elements / ne[0]; }
  uint64_t row_bytes() const { return n_bytes / static_cast<uint64_t>(n_rows()); }
  // Bytes of row r (0 ≤ r < n_rows; throws otherwise).
  std::span<const uint8_t> row(int64_t r) const;
  std::vector<int64_t> dims() const { return {ne.begin(), ne.begin() + n_dims}; }
  // "[4096, 32000]" (ne order, as gguf-dump prints).
  std::string shape_string() const;
  // Bits per weight: 8 · bytes / elements.
  double bpw() const { return 8.0 * static_cast<double>(n_bytes) / static_cast<double>(n_elements); }
};

// Overflow-checked helpers shared by reader and writer.
bool is_valid_alignment(uint64_t alignment);  // power of two in [1, kMaxAlignment]
// x rounded up to a multiple of `alignment` (a valid alignment); nullopt on overflow.
std::optional<uint64_t> align_up(uint64_t x, uint64_t alignment);

}  // namespace squeeze::gguf
