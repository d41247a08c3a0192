// quant/kquant_scalar.cpp — scalar reference kernels of the K-quants Q4_K, Q5_K, Q6_K:
// quantize (scale/min search per sub-block, then 6-/8-bit super-block scales),
// dequantize, and the dot with a Q8_K activation row.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"
#include "quant/scale_search.h"

namespace squeeze::quant::impl {
namespace {

constexpr int kSub = 32;  // Q4_K/Q5_K sub-block
constexpr int kNSub = kQK_K / kSub;

// Shared by Q4_K (qmax 15) and Q5_K (qmax 31): fills d, dmin, scales and the final
// codes q[256] in [0, qmax] computed with the stored (rounded) scales.
void quantize_affine_superblock(const float* x, const float* importance, int qmax, uint16_t& d16, uint16_t& dmin16,
                                uint8_t packed[kKScaleBytes], uint8_t q[kQK_K]) {
  float w[kQK_K];
  const bool weighted = importance_weights(kQK_K, x, importance, w);
  float s[kNSub], m[kNSub];
  for (int j = 0; j < kNSub; ++j)
    s[j] = search_affine(kSub, x + j * kSub, weighted ? w + j * kSub : nullptr, qmax, &m[j], q + j * kSub);
  const float smax = *std::max_element(s, s + kNSub), mmax = *std::max_element(m, m + kNSub);
  d16 = f32_to_f16(smax / 63.0f);
  dmin16 = f32_to_f16(mmax / 63.0f);
  const float d = f16_to_f32(d16), dmin = f16_to_f32(dmin16);
  uint8_t sc[kNSub], mn[kNSub];
  for (int j = 0; j < kNSub; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0 ? std::clamp(nearest_int(s[j] / d), 0, 63) : 0);
    mn[j] = static_cast<uint8_t>(dmin > 0 ? std::clamp(nearest_int(m[j] / dmin), 0, 63) : 0);
  }
  k_pack_scale_min(sc, mn, packed);
  for (int j = 0; j < kNSub; ++j) {
    const float es = d * sc[j], em = dmin * mn[j];
    for (int i = 0; i < kSub; ++i) {
      const int l = es > 0 ? nearest_int((x[j * kSub + i] + em) / es) : 0;
      q[j * kSub + i] = static_cast<uint8_t>(std::clamp(l, 0, qmax));
    }
  }
}

// Integer part of a Q4_K/Q5_K block's dot: sum_j sc_j * sum(q*a) and sum_j m_j * bsum_j.
template <typename GetQ>
void affine_block_dot(const uint8_t* scales, const BlockQ8_K& y, GetQ get_q, int& isum, int& msum) {
  isum = 0, msum = 0;
  for (int j = 0; j < kNSub; ++j) {
    uint8_t sc, m;
    k_scale_min(scales, j, sc, m);
    int s = 0;
    for (int i = 0; i < kSub; ++i) s += get_q(j * kSub + i) * y.qs[j * kSub + i];
    isum += sc * s;
    msum += m * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
  }
}

}  // namespace

// ---- Q4_K ----
void ref_quantize_q4_k(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t q[kQK_K];
    quantize_affine_superblock(x + i * kQK_K, importance ? importance + i * kQK_K : nullptr, 15, b[i].d, b[i].dmin,
                               b[i].scales, q);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) b[i].qs[c * 32 + l] = static_cast<uint8_t>(q[c * 64 + l] | (q[c * 64 + 32 + l] << 4));
  }
}
// Q4_K and Q5_K share the affine layout (d·sc·q − dmin·m per 32-element sub-block) and
// differ only in how a code is stored: both are written once over a code accessor.
template <typename Block, int (*Code)(const Block&, int)>
void dequantize_affine_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, y += kQK_K) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int j = 0; j < kNSub; ++j) {
      uint8_t sc, m;
      k_scale_min(b[i].scales, j, sc, m);
      const float es = d * sc, em = dmin * m;
      for (int l = 0; l < kSub; ++l) y[j * kSub + l] = es * Code(b[i], j * kSub + l) - em;
    }
  }
}
template <typename Block, int (*Code)(const Block&, int)>
float dot_affine_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float s = 0;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum, msum;
    affine_block_dot(x[i].scales, y[i], [&](int e) { return Code(x[i], e); }, isum, msum);
    s += f16_to_f32(x[i].d) * y[i].d * static_cast<float>(isum) - f16_to_f32(x[i].dmin) * y[i].d * static_cast<float>(msum);
  }
  return s;
}

static inline int q4k_code(const BlockQ4_K& b, int e) {
  const int c = e / 64, l = e % 32;
  return (e % 64) < 32 ? (b.qs[c * 32 + l] & 0x0F) : (b.qs[c * 32 + l] >> 4);
}
void ref_dequantize_q4_k(const void* src, float* y, int64_t n) { dequantize_affine_k<BlockQ4_K, q4k_code>(src, y, n); }
float ref_dot_q4_k(int64_t n, const void* w, const void* a) { return dot_affine_k<BlockQ4_K, q4k_code>(n, w, a); }

// ---- Q5_K ----
void ref_quantize_q5_k(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    uint8_t q[kQK_K];
    quantize_affine_superblock(x + i * kQK_K, importance ? importance + i * kQK_K : nullptr, 31, b[i].d, b[i].dmin,
                               b[i].scales, q);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const int lo = q[c * 64 + l], hi = q[c * 64 + 32 + l];
        b[i].qs[c * 32 + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        b[i].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
  }
}
static inline int q5k_code(const BlockQ5_K& b, int e) {
  const int c = e / 64, l = e % 32, upper = (e % 64) >= 32;
  const int low4 = upper ? (b.qs[c * 32 + l] >> 4) : (b.qs[c * 32 + l] & 0x0F);
  return low4 | (((b.qh[l] >> (2 * c + upper)) & 1) << 4);
}
void ref_dequantize_q5_k(const void* src, float* y, int64_t n) { dequantize_affine_k<BlockQ5_K, q5k_code>(src, y, n); }
float ref_dot_q5_k(int64_t n, const void* w, const void* a) { return dot_affine_k<BlockQ5_K, q5k_code>(n, w, a); }

// ---- Q6_K ----
// Element e of a block (half h = e/128, r = e%128, l = r%32, quarter k = r/32) takes its
// low nibble from ql[64h + l + 32(k&1)] (high nibble when k >= 2) and its top two bits
// from bits 2k..2k+1 of qh[32h + l]; its scale is scales[e/16].
static inline int q6k_code(const BlockQ6_K& b, int e) {
  const int h = e / 128, r = e % 128, l = r % 32, k = r / 32;
  const uint8_t lq = b.ql[64 * h + l + 32 * (k & 1)];
  const int low4 = k >= 2 ? (lq >> 4) : (lq & 0x0F);
  return (low4 | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4)) - 32;
}
void ref_quantize_q6_k(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  float w[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    const bool weighted = importance_weights(kQK_K, x, importance ? importance + i * kQK_K : nullptr, w);
    float s[16];
    int8_t q[kQK_K];
    for (int j = 0; j < 16; ++j) s[j] = search_symmetric(16, x + 16 * j, weighted ? w + 16 * j : nullptr, -32, 31, q);
    // 8-bit sub-block scales: the largest-magnitude scale maps to -128.
    float smax = 0;
    for (float v : s)
      if (std::fabs(v) > std::fabs(smax)) smax = v;
    b[i].d = f32_to_f16(smax / -128.0f);
    const float d = f16_to_f32(b[i].d);
    std::memset(b[i].ql, 0, sizeof b[i].ql);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int j = 0; j < 16; ++j) {
      b[i].scales[j] = static_cast<int8_t>(d != 0 ? std::clamp(nearest_int(s[j] / d), -128, 127) : 0);
      const float es = d * b[i].scales[j];
      for (int t = 0; t < 16; ++t) {
        const int e = 16 * j + t;
        const int code = (es != 0 ? std::clamp(nearest_int(x[e] / es), -32, 31) : 0) + 32;
        const int h = e / 128, r = e % 128, l = r % 32, k = r / 32;
        b[i].ql[64 * h + l + 32 * (k & 1)] |= static_cast<uint8_t>((code & 0x0F) << (k >= 2 ? 4 : 0));
        b[i].qh[32 * h + l] |= static_cast<uint8_t>((code >> 4) << (2 * k));
      }
    }
  }
}
void ref_dequantize_q6_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, y += kQK_K) {
    const float d = f16_to_f32(b[i].d);
    for (int e = 0; e < kQK_K; ++e) y[e] = d * b[i].scales[e / 16] * q6k_code(b[i], e);
  }
}
float ref_dot_q6_k(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float s = 0;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      int sj = 0;
      for (int t = 0; t < 16; ++t) sj += q6k_code(x[i], 16 * j + t) * y[i].qs[16 * j + t];
      isum += x[i].scales[j] * sj;
    }
    s += f16_to_f32(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return s;
}

}  // namespace squeeze::quant::impl
