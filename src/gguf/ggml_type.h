// gguf/ggml_type.h — the ggml tensor type ids a GGUF file may name, with their block
// geometry (a format fact from ggml.h / ggml-common.h). The file reader uses it to
// size and validate tensors of every known type; quant/ attaches kernels to the
// types squeeze computes with.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace squeeze::gguf {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;
  int64_t block_size;   // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
};

// Geometry of a known type id; nullopt for ids this build does not know.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
inline GgmlTypeInfo ggml_type_info(GgmlType t) { return *ggml_type_info(static_cast<uint32_t>(t)); }
// Parses "Q4_K", "q4_k", "F16" ...; nullopt if unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

}  // namespace squeeze::gguf
