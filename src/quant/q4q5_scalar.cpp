// quant/q4q5_scalar.cpp — scalar reference kernels of the 32-element types with an offset or a
// fifth bit: Q4_1 (d·q + m), Q5_0 (d·(q − 16)), Q5_1 (d·q + m). Each has two quantizers:
// ggml's round-to-nearest one (rtn_quantize_*, byte for byte what ggml and the gguf
// package write), and the table's searching, optionally importance-weighted one, which
// keeps whichever of the two blocks has the smaller (weighted) error, so it is never
// worse than ggml's block by block.
#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"
#include "quant/scale_search.h"

namespace squeeze::quant::impl {
namespace {

constexpr int kHalf = kQK / 2;

// Codes: byte j of qs holds element j (low nibble) and j + 16 (high nibble); bit j of qh,
// read as a little-endian u32, is the fifth bit of element j.
uint32_t high_bits(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}
int nibble(const uint8_t* qs, int j) { return j < kHalf ? qs[j] & 0x0F : qs[j - kHalf] >> 4; }
int code(const BlockQ4_1& b, int j) { return nibble(b.qs, j); }
template <typename B>
int code(const B& b, int j) {
  return nibble(b.qs, j) | static_cast<int>((high_bits(b.qh) >> j) & 1) << 4;
}

void pack(BlockQ4_1& b, const uint8_t q[kQK]) {
  for (int j = 0; j < kHalf; ++j) b.qs[j] = static_cast<uint8_t>(q[j] | q[j + kHalf] << 4);
}
template <typename B>
void pack(B& b, const uint8_t q[kQK]) {
  uint32_t h = 0;
  for (int j = 0; j < kHalf; ++j) b.qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | (q[j + kHalf] & 0x0F) << 4);
  for (int j = 0; j < kQK; ++j) h |= static_cast<uint32_t>(q[j] >> 4) << j;
  for (int k = 0; k < 4; ++k) b.qh[k] = static_cast<uint8_t>(h >> (8 * k));
}

// The offset types' stored fields; Q5_0 has no m (its offset is the fixed −16·d).
template <typename B> constexpr bool kHasMin = true;
template <> constexpr bool kHasMin<BlockQ5_0> = false;
template <typename B> constexpr int kQMax = 31;
template <> constexpr int kQMax<BlockQ4_1> = 15;

// The dequantized value of element j, rounded exactly as ggml and gguf-py do: d·q then
// + m (two f32 roundings; this file is compiled without FMA contraction, baseline x86-64).
template <typename B>
float value(const B& b, int j) {
  if constexpr (kHasMin<B>) return f16_to_f32(b.d) * static_cast<float>(code(b, j)) + f16_to_f32(b.m);
  else return f16_to_f32(b.d) * static_cast<float>(code(b, j) - 16);
}

// 1/d, or 0 where ggml divides by zero (d = 0) or would overflow to infinity (d below
// ~3e-39, where its float-to-int conversion is undefined): codes then come out 0 / 16.
float inverse(float d) {
  const float id = d != 0 ? 1.0f / d : 0.0f;
  return std::isfinite(id) ? id : 0.0f;
}

// ggml's reference quantizers (quantize_row_q4_1_ref & co.): codes from the unrounded
// f32 scale and min, truncating x·id + 0.5 (+ 16.5 for Q5_0's signed range).
template <typename B>
void rtn_block(const float* x, B& b) {
  uint8_t q[kQK];
  if constexpr (kHasMin<B>) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < kQK; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
    const float d = (hi - lo) / static_cast<float>(kQMax<B>), id = inverse(d);
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(lo);
    for (int j = 0; j < kQK; ++j) {
      const float t = (x[j] - lo) * id;
      q[j] = static_cast<uint8_t>(std::min(kQMax<B>, static_cast<int>(t + 0.5f)));
    }
  } else {
    float amax = 0, vmax = 0;  // the first element of largest magnitude, with its sign
    for (int j = 0; j < kQK; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), vmax = x[j];
    const float d = vmax / -16.0f, id = inverse(d);
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) {
      const float t = x[j] * id;
      q[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(t + 16.5f)));
    }
  }
  pack(b, q);
}

// Searched block: scale (and min) by scale_search.h, final codes for the stored f16
// fields (the nearest code per element is then optimal).
template <typename B>
void search_block(const float* x, const float* w, B& b) {
  uint8_t q[kQK];
  if constexpr (kHasMin<B>) {
    float neg_m;
    const float s = search_affine(kQK, x, w, kQMax<B>, &neg_m, q, AffineMin::free);
    b.d = f32_to_f16(s);
    b.m = f32_to_f16(-neg_m);
    const float d = f16_to_f32(b.d), m = f16_to_f32(b.m), id = d > 0 ? 1.0f / d : 0.0f;
    // Clamped in float first: a far outlier's quotient may not fit an int.
    for (int j = 0; j < kQK; ++j)
      q[j] = static_cast<uint8_t>(nearest_int(std::clamp((x[j] - m) * id, 0.0f, static_cast<float>(kQMax<B>))));
  } else {
    int8_t sq[kQK];
    b.d = f32_to_f16(search_symmetric(kQK, x, w, -16, 15, sq));
    const float d = f16_to_f32(b.d), id = d != 0 ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) q[j] = static_cast<uint8_t>(nearest_int(std::clamp(x[j] * id, -16.0f, 15.0f)) + 16);
  }
  pack(b, q);
}

template <typename B>
double block_error(const float* x, const float* w, const B& b) {
  double e = 0;
  for (int j = 0; j < kQK; ++j) {
    const double d = static_cast<double>(value(b, j)) - x[j];
    e += (w ? w[j] : 1.0) * d * d;
  }
  return e;
}

template <typename B>
void quantize(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<B*>(dst);
  float w[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const bool weighted = importance_weights(kQK, x, importance ? importance + i * kQK : nullptr, w);
    B rtn;
    rtn_block(x, rtn);
    search_block(x, weighted ? w : nullptr, b[i]);
    if (block_error(x, weighted ? w : nullptr, rtn) < block_error(x, weighted ? w : nullptr, b[i])) b[i] = rtn;
  }
}

template <typename B>
void rtn_quantize(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<B*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) rtn_block(x + i * kQK, b[i]);
}

template <typename B>
void dequantize(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const B*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK)
    for (int j = 0; j < kQK; ++j) y[j] = value(b[i], j);
}

// Against Q8_0 activations a = da·c: Σ (d·q + m)·da·c = d·da·Σq·c + m·da·Σc, both integer
// sums exact; Q5_0's signed codes need no second term.
template <typename B>
float dot(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const B*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int qc = 0, csum = 0;
    for (int j = 0; j < kQK; ++j) {
      qc += (kHasMin<B> ? code(x[i], j) : code(x[i], j) - 16) * y[i].qs[j];
      csum += y[i].qs[j];
    }
    const float dy = f16_to_f32(y[i].d);
    float term = f16_to_f32(x[i].d) * dy * static_cast<float>(qc);
    if constexpr (kHasMin<B>) term += f16_to_f32(x[i].m) * dy * static_cast<float>(csum);
    s += term;
  }
  return s;
}

}  // namespace

#define SQZ_Q4Q5_REF(T, B)                                                                                       \
  void ref_quantize_##T(const float* x, void* dst, int64_t n, const float* imp) { quantize<B>(x, dst, n, imp); } \
  void rtn_quantize_##T(const float* x, void* dst, int64_t n) { rtn_quantize<B>(x, dst, n); }                    \
  void ref_dequantize_##T(const void* src, float* y, int64_t n) { dequantize<B>(src, y, n); }                    \
  float ref_dot_##T(int64_t n, const void* w, const void* a) { return dot<B>(n, w, a); }
SQZ_Q4Q5_REF(q4_1, BlockQ4_1)
SQZ_Q4Q5_REF(q5_0, BlockQ5_0)
SQZ_Q4Q5_REF(q5_1, BlockQ5_1)
#undef SQZ_Q4Q5_REF

}  // namespace squeeze::quant::impl
