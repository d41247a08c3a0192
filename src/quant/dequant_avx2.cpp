// quant/dequant_avx2.cpp — AVX2 dequantizers of the K-quants that batched GEMM (prefill)
// decodes into f32 panels. Each computes exactly the scalar reference's float operations
// in the same order (Q4_K: (d·sc)·q − dmin·m as a multiply then a subtract; Q6_K:
// (d·sc)·q), so results are bit-identical to ref_dequantize_*.
#include <immintrin.h>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant::impl {
namespace {

// 8 signed bytes at p → 8 floats.
inline __m256 bytes_to_ps(__m128i v8) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v8)); }

}  // namespace

void avx2_dequantize_q4_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  for (int64_t i = 0; i < n / kQK_K; ++i, y += kQK_K) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int c = 0; c < 4; ++c) {  // chunk c: sub-block 2c in the low nibbles, 2c+1 in the high ones
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs + 32 * c));
      const __m256i lo = _mm256_and_si256(q, low_mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low_mask);
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * c + half;
        uint8_t sc, m;
        k_scale_min(b[i].scales, j, sc, m);
        const __m256 es = _mm256_set1_ps(d * sc), em = _mm256_set1_ps(dmin * m);
        const __m256i codes = half ? hi : lo;
        float* out = y + 32 * j;
        for (int t = 0; t < 4; ++t) {
          const __m128i part = t < 2 ? _mm256_castsi256_si128(codes) : _mm256_extracti128_si256(codes, 1);
          const __m128i eight = (t % 2) ? _mm_srli_si128(part, 8) : part;
          _mm256_storeu_ps(out + 8 * t, _mm256_sub_ps(_mm256_mul_ps(es, bytes_to_ps(eight)), em));
        }
      }
    }
  }
}

void avx2_dequantize_q6_k(const void* src, float* y, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  const __m256i low_mask = _mm256_set1_epi8(0x0F), two_bits = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  for (int64_t i = 0; i < n / kQK_K; ++i, y += kQK_K) {
    const float d = f16_to_f32(b[i].d);
    for (int h = 0; h < 2; ++h) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qh + 32 * h));
      for (int k = 0; k < 4; ++k) {  // 32 elements: e = 128h + 32k + l
        const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].ql + 64 * h + 32 * (k & 1)));
        const __m256i low4 = k >= 2 ? _mm256_and_si256(_mm256_srli_epi16(ql, 4), low_mask) : _mm256_and_si256(ql, low_mask);
        const __m256i high2 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two_bits);
        const __m256i codes = _mm256_sub_epi8(_mm256_or_si256(low4, _mm256_slli_epi16(high2, 4)), bias);
        float* out = y + 128 * h + 32 * k;
        for (int t = 0; t < 4; ++t) {
          const int e = 128 * h + 32 * k + 8 * t;
          const __m256 es = _mm256_set1_ps(d * b[i].scales[e / 16]);
          const __m128i part = t < 2 ? _mm256_castsi256_si128(codes) : _mm256_extracti128_si256(codes, 1);
          const __m128i eight = (t % 2) ? _mm_srli_si128(part, 8) : part;
          _mm256_storeu_ps(out + 8 * t, _mm256_mul_ps(es, bytes_to_ps(eight)));
        }
      }
    }
  }
}

}  // namespace squeeze::quant::impl
