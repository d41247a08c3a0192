// quant/dot_q6k_avx2.cpp — AVX2 dot of Q6_K weight rows with Q8_K activation rows.
// Compiled for AVX2.
//
// Codes are rebuilt as unsigned u = q + 32 in [0, 63] (4 low bits from ql, 2 high bits
// from qh), multiplied with maddubs and scaled per 16-element sub-block with madd; the
// −32 offset is removed once per block as 32·Σ scale_j·bsum_j. All exact in i32.
#include "quant/avx2_common.h"
#include "quant/blocks.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant::impl {
namespace {

using namespace avx2;

// i16 vector whose lanes 0-7 hold scale k2 and lanes 8-15 scale k2+1 of the 8 scales
// `half8` holds (as i16, the same 8 in both 128-bit lanes): one in-lane byte shuffle.
inline __m256i scale_pair(__m256i half8, int k2) {
  const char a = static_cast<char>(2 * k2), b = static_cast<char>(2 * k2 + 2);
  return _mm256_shuffle_epi8(half8, _mm256_setr_epi8(a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a,
                                                     a + 1, a, a + 1, b, b + 1, b, b + 1, b, b + 1, b, b + 1, b,
                                                     b + 1, b, b + 1, b, b + 1, b, b + 1));
}

template <int NT>
void dot_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y[NT];
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(a) + t * stride);
    acc[t] = _mm256_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<sizeof(BlockQ6_K)>(x + i);
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    __m256i sumi[NT];
    const __m256i sc16 = _mm256_cvtepi8_epi16(s8);
    for (int t = 0; t < NT; ++t) {
      const __m256i off = _mm256_madd_epi16(sc16, load(y[t][i].bsums));
      sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, 5));
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      // Scales 8h..8h+7 as i16 in both lanes.
      const __m256i half8 = h == 0 ? _mm256_permute2x128_si256(sc16, sc16, 0x00)
                                   : _mm256_permute2x128_si256(sc16, sc16, 0x11);
      const __m256i l1 = load(x[i].ql + 64 * h), l2 = load(x[i].ql + 64 * h + 32);
      const __m256i qh = load(x[i].qh + 32 * h);
      __m256i u[4];
      u[0] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
      u[1] = _mm256_or_si256(_mm256_and_si256(l2, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
      u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(qh, m2));
      u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l2, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m256i sc = scale_pair(half8, 2 * k);
        for (int t = 0; t < NT; ++t) {
          const __m256i p = _mm256_maddubs_epi16(u[k], load(y[t][i].qs + 128 * h + 32 * k));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, sc));
        }
      }
    }
    const float d = half(x[i].d);
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][i].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  for (int t = 0; t < NT; ++t) out[t] = hsum(acc[t]);
}

}  // namespace

float avx2_dot_q6_k(int64_t n, const void* w, const void* a) {
  float r;
  dot_rows<1>(n, w, a, 0, &r);
  return r;
}
void avx2_multi_q6_k(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) {
  switch (nt) {
    case 1: return dot_rows<1>(n, w, a, s, out);
    case 2: return dot_rows<2>(n, w, a, s, out);
    case 3: return dot_rows<3>(n, w, a, s, out);
    default: return dot_rows<4>(n, w, a, s, out);
  }
}

}  // namespace squeeze::quant::impl
