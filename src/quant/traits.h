// quant/traits.h — one table of kernels per GGUF weight type, per ISA.
//
// The table is what the file reader, the quantizer and the matmul consult: block
// geometry, dequantize, reference quantize (optionally importance-weighted), the dot
// kernel and the activation type that dot takes. Every ISA has its own table
// (scalar reference + AVX2 in their own translation units), chosen once at run time
// like kernels/cpu/ops.h; tests fetch each ISA's table to compare them.
#pragma once

#include <cstdint>
#include <span>

#include "gguf/ggml_type.h"
#include "kernels/cpu/ops.h"

namespace squeeze::quant {

using gguf::GgmlType;
using kernels::cpu::Isa;

// Most activation rows one dot_multi call takes (the GEMM's token tile).
inline constexpr int kMaxDotRows = 4;

struct QuantTraits {
  GgmlType type;
  Isa isa;  // the ISA of vec_dot / dot_multi / quantize_act_row
  const char* name;
  int64_t block_size;   // elements per block
  int64_t block_bytes;  // bytes per block
  // The type the activation row must have for vec_dot: Q8_K for K-quants, Q8_0 for
  // the 32-element types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4), F32 for F32/F16/BF16 rows.
  GgmlType dot_type;

  // n elements (a multiple of block_size) of src blocks -> f32.
  void (*dequantize_row)(const void* src, float* dst, int64_t n);
  // Reference quantizer: searches block scales (and mins) to minimise squared error,
  // weighted per element by importance[col]*sqrt(sigma^2 + x^2) when importance
  // (n values, one per column) is given. n a multiple of block_size.
  void (*quantize_row)(const float* src, void* dst, int64_t n, const float* importance);
  // Fast round-to-nearest quantizer for activations; only for dot types (Q8_K, Q8_0),
  // null otherwise.
  void (*quantize_act_row)(const float* src, void* dst, int64_t n);
  // sum_i w[i] * a[i] over n elements: w a row of this type, a a row of dot_type.
  float (*vec_dot)(int64_t n, const void* w, const void* a);
  // out[t] = vec_dot(n, w, a + t*a_stride bytes) for t < nt <= kMaxDotRows, decoding
  // each weight block once for all nt rows (the GEMM tile). Same sums as vec_dot.
  void (*dot_multi)(int64_t n, const void* w, const void* a, int64_t a_stride, int nt, float* out);
  // out[r] = vec_dot(n, w + r*w_stride bytes, a) for r < nr <= kMaxDotRows: the GEMV's
  // row group, sharing the activation's per-block work across the rows. Same sums as
  // vec_dot, bit for bit. Null where the type has none (the GEMV calls vec_dot).
  void (*dot_wrows)(int64_t n, const void* w, int64_t w_stride, int nr, const void* a, float* out) = nullptr;
  // out[r * nt + t] = vec_dot(n, w + r*w_stride, a + t*a_stride) for r < nr, t < nt (both
  // ≤ kMaxDotRows): the GEMM's micro-tile, decoding each weight block once for the nt
  // tokens and each activation block's sums once for the nr rows. Bit for bit vec_dot.
  // Null where the type has none (the GEMM calls dot_multi per weight row).
  void (*dot_tile)(int64_t n, const void* w, int64_t w_stride, int nr, const void* a, int64_t a_stride, int nt,
                   float* out) = nullptr;
};

// The table of `type` for `isa`; nullptr if this build/CPU lacks the ISA or squeeze has
// no kernels for the type.
const QuantTraits* traits_for(GgmlType type, Isa isa);
// The active ISA's table (kernels::cpu::active_isa()); throws squeeze::Error naming the
// type when squeeze cannot compute with it.
const QuantTraits& traits(GgmlType type);
// True if traits(type) would succeed.
bool is_supported(GgmlType type);
// The weight types with kernels (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4,
// Q4_K, Q5_K, Q6_K); Q8_K
// has a table too (quantize/dequantize/act) but no dot.
std::span<const GgmlType> supported_types();

// Bytes of a row of n elements; throws if n is not a multiple of the block size.
int64_t row_bytes(GgmlType type, int64_t n);

}  // namespace squeeze::quant
