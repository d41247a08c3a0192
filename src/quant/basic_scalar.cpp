// quant/basic_scalar.cpp — scalar reference kernels of the plain rows (F32, F16, BF16) and
// the 32-element types Q8_0 and Q4_0, plus the activation quantizers (Q8_0, Q8_K).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"
#include "quant/scale_search.h"

namespace squeeze::quant::impl {

// ---- plain rows: the dot takes f32 activations ----
void ref_quantize_f32(const float* x, void* dst, int64_t n, const float*) { std::memcpy(dst, x, n * sizeof(float)); }
void ref_dequantize_f32(const void* src, float* y, int64_t n) { std::memcpy(y, src, n * sizeof(float)); }
float ref_dot_f32(int64_t n, const void* w, const void* a) {
  const float* x = static_cast<const float*>(w);
  const float* y = static_cast<const float*>(a);
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

void ref_quantize_f16(const float* x, void* dst, int64_t n, const float*) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}
void ref_dequantize_f16(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}
float ref_dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const float* y = static_cast<const float*>(a);
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += f16_to_f32(x[i]) * y[i];
  return s;
}

void ref_quantize_bf16(const float* x, void* dst, int64_t n, const float*) {
  auto* y = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}
void ref_dequantize_bf16(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(x[i]);
}
float ref_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const float* y = static_cast<const float*>(a);
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += bf16_to_f32(x[i]) * y[i];
  return s;
}

// ---- Q8_0 ----
void ref_quantize_q8_0(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  float w[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const bool weighted = importance_weights(kQK, x, importance ? importance + i * kQK : nullptr, w);
    int8_t q[kQK];
    const float d = search_symmetric(kQK, x, weighted ? w : nullptr, -127, 127, q);
    b[i].d = f32_to_f16(d);
    // Final codes for the stored (rounded) scale: nearest code per element is optimal.
    const float df = f16_to_f32(b[i].d), id = df != 0 ? 1.0f / df : 0.0f;
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(std::clamp(nearest_int(x[j] * id), -127, 127));
  }
}
void ref_dequantize_q8_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[i * kQK + j] = d * b[i].qs[j];
  }
}
float ref_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK; ++j) isum += x[i].qs[j] * y[i].qs[j];
    s += f16_to_f32(x[i].d) * f16_to_f32(y[i].d) * static_cast<float>(isum);
  }
  return s;
}

// Activation rows: d = amax/127, round to nearest (ties to even, as the SIMD version).
void ref_quantize_act_q8_0(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax > 0 ? 127.0f / amax : 0.0f;
    b[i].d = f32_to_f16(amax / 127.0f);
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
  }
}

// ---- Q4_0 ----
void ref_quantize_q4_0(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  float w[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const bool weighted = importance_weights(kQK, x, importance ? importance + i * kQK : nullptr, w);
    int8_t q[kQK];
    const float d = search_symmetric(kQK, x, weighted ? w : nullptr, -8, 7, q);
    b[i].d = f32_to_f16(d);
    const float df = f16_to_f32(b[i].d), id = df != 0 ? 1.0f / df : 0.0f;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::clamp(nearest_int(x[j] * id), -8, 7) + 8;
      const int hi = std::clamp(nearest_int(x[j + kQK / 2] * id), -8, 7) + 8;
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}
void ref_dequantize_q4_0(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, y += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * ((b[i].qs[j] & 0x0F) - 8);
      y[j + kQK / 2] = d * ((b[i].qs[j] >> 4) - 8);
    }
  }
}
float ref_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float s = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK / 2; ++j)
      isum += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + kQK / 2];
    s += f16_to_f32(x[i].d) * f16_to_f32(y[i].d) * static_cast<float>(isum);
  }
  return s;
}

// ---- Q8_K (activations only) ----
void ref_quantize_act_q8_k(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    float amax = 0;
    for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax > 0 ? 127.0f / amax : 0.0f;
    b[i].d = amax / 127.0f;
    for (int j = 0; j < kQK_K; ++j) b[i].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += b[i].qs[g * 16 + j];
      b[i].bsums[g] = static_cast<int16_t>(s);
    }
  }
}
void ref_quantize_q8_k(const float* x, void* dst, int64_t n, const float*) { ref_quantize_act_q8_k(x, dst, n); }
void ref_dequantize_q8_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i)
    for (int j = 0; j < kQK_K; ++j) y[i * kQK_K + j] = b[i].d * b[i].qs[j];
}

}  // namespace squeeze::quant::impl
