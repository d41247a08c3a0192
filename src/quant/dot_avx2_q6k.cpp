// quant/dot_avx2_q6k.cpp — AVX2 dot of Q6_K weight rows with Q8_K activation rows.
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

// i16 vector whose lanes 0-7 hold scale s[j] and lanes 8-15 hold s[j+1].
inline __m256i scale_pair(__m128i s8, int j) {
  const __m128i idx = _mm_setr_epi8(static_cast<char>(j), j, j, j, j, j, j, j, j + 1, j + 1, j + 1, j + 1, j + 1,
                                    j + 1, j + 1, j + 1);
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s8, idx));
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
    for (int p = 0; p < 4; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(x + i) + 2 * sizeof(BlockQ6_K) + 64 * p, _MM_HINT_T0);
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    __m256i sumi[NT];
    const __m256i sc16 = _mm256_cvtepi8_epi16(s8);
    for (int t = 0; t < NT; ++t) {
      const __m256i off = _mm256_madd_epi16(sc16, load(y[t][i].bsums));
      sumi[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, 5));
    }
    for (int h = 0; h < 2; ++h) {
      const __m256i l1 = load(x[i].ql + 64 * h), l2 = load(x[i].ql + 64 * h + 32);
      const __m256i qh = load(x[i].qh + 32 * h);
      __m256i u[4];
      u[0] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2));
      u[1] = _mm256_or_si256(_mm256_and_si256(l2, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2));
      u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(qh, m2));
      u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l2, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2));
      for (int k = 0; k < 4; ++k) {
        const __m256i sc = scale_pair(s8, 8 * h + 2 * k);
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
