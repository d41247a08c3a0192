// quant/mxfp4_scalar.cpp — scalar reference kernels of MXFP4 (OCP microscaling FP4: E2M1
// codes with one E8M0 power-of-two scale per 32 elements, the format of gpt-oss's expert
// weights). As for Q4_1/Q5_x there are two quantizers: ggml's round-to-nearest one
// (rtn_quantize_mxfp4, byte for byte what ggml and the gguf package write) and the table's
// one, which also tries the neighbouring exponents and keeps the block with the smallest
// (importance-)weighted error, so it is never worse than ggml's block by block.
#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"
#include "quant/scale_search.h"

namespace squeeze::quant::impl {
namespace {
namespace mxfp4 {  // named: this file shares a unity batch with q4q5_scalar.cpp's helpers

constexpr int kHalf = kQK / 2;
// Largest exponent the search may pick: above it 12·2^(e−128) (the largest code) is not a
// finite f32. ggml's own choice never exceeds it (amax < 2^128 gives e ≤ 252).
constexpr int kMaxSearchExponent = 252;

// ggml's best_index_mxfp4: the table entry nearest x, by |value·d − x| in f32, the first
// in table order on a tie (so +0 rather than −0, 2 rather than 3 for 2.5·d, −2 for −2.5·d).
// A linear search, not thresholds: it must tie-break exactly as ggml does.
uint8_t best_index(float x, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kMxfp4Values[i]) * d - x);
    if (err < best_err) best = i, best_err = err;
  }
  return static_cast<uint8_t>(best);
}

// ggml's exponent: floor(log2f(amax)) − 2 + 127, so that amax / d lies in [8, 16) and the
// top code 12 sits near the block's largest value; 0 for an all-zero block. ggml casts the
// float to uint8_t, undefined below 0 (amax < 2^-125); clamped to [0, 254] here.
int ggml_exponent(float amax) {
  if (!(amax > 0)) return 0;
  return std::clamp(static_cast<int>(std::floor(std::log2(amax)) - 2.0f + 127.0f), 0, 254);
}

void encode(const float* x, int e, BlockMXFP4& b) {
  b.e = static_cast<uint8_t>(e);
  const float d = e8m0_half(b.e);
  for (int j = 0; j < kHalf; ++j)
    b.qs[j] = static_cast<uint8_t>(best_index(x[j], d) | best_index(x[j + kHalf], d) << 4);
}

float value(const BlockMXFP4& b, int j) {
  const int nib = j < kHalf ? b.qs[j] & 0x0F : b.qs[j - kHalf] >> 4;
  return static_cast<float>(kMxfp4Values[nib]) * e8m0_half(b.e);
}

double block_error(const float* x, const float* w, const BlockMXFP4& b) {
  double err = 0;
  for (int j = 0; j < kQK; ++j) {
    const double d = static_cast<double>(value(b, j)) - x[j];
    err += (w ? w[j] : 1.0) * d * d;
  }
  return err;
}

float abs_max(const float* x) {
  float amax = 0;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

// With a power-of-two scale the only freedom is the exponent: ggml's, one finer (more
// resolution, the largest values clipped to 12·d) and one coarser (no clipping; wins when
// amax/d is near 16, where ggml's clips by up to a quarter). The codes are nearest per
// element, optimal for a fixed scale under any positive weights.
void search_block(const float* x, const float* w, BlockMXFP4& b) {
  const int e0 = ggml_exponent(abs_max(x));
  encode(x, e0, b);
  if (abs_max(x) == 0) return;
  double best = block_error(x, w, b);
  for (const int e : {e0 - 1, e0 + 1}) {
    if (e < 0 || e > kMaxSearchExponent) continue;
    BlockMXFP4 c;
    encode(x, e, c);
    const double err = block_error(x, w, c);
    if (err < best) best = err, b = c;
  }
}

}  // namespace mxfp4
}  // namespace

void rtn_quantize_mxfp4(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockMXFP4*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) mxfp4::encode(x, mxfp4::ggml_exponent(mxfp4::abs_max(x)), b[i]);
}

// Importance only steers the exponent choice (the per-element codes are nearest anyway).
void ref_quantize_mxfp4(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockMXFP4*>(dst);
  float w[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const bool weighted = importance_weights(kQK, x, importance ? importance + i * kQK : nullptr, w);
    mxfp4::search_block(x, weighted ? w : nullptr, b[i]);
  }
}

void ref_dequantize_mxfp4(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockMXFP4*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = e8m0_half(b[i].e);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(kMxfp4Values[b[i].qs[j] & 0x0F]) * d;
      y[j + kQK / 2] = static_cast<float>(kMxfp4Values[b[i].qs[j] >> 4]) * d;
    }
  }
}

// ggml's vec_dot_mxfp4_q8_0: an exact integer dot of the table values with the Q8_0 codes
// per block, scaled by the two block scales.
float ref_dot_mxfp4(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK / 2; ++j)
      isum += kMxfp4Values[x[i].qs[j] & 0x0F] * y[i].qs[j] + kMxfp4Values[x[i].qs[j] >> 4] * y[i].qs[j + kQK / 2];
    s += e8m0_half(x[i].e) * f16_to_f32(y[i].d) * static_cast<float>(isum);
  }
  return s;
}

}  // namespace squeeze::quant::impl
