// quant/dot_avx512.cpp — AVX-512 dots (F/BW/VL/DQ + VNNI) of the weight types that carry
// the real models' bytes: F32/F16/BF16 rows with f32 activations, Q8_0 with Q8_0, and
// Q4_K / Q5_K / Q6_K with Q8_K. Compiled with squeeze_isa_sources(avx512 ...).
//
// The float types run in zmm registers. The integer types keep the AVX2 kernels' exact
// integer block sums and use VNNI to shorten them: Q8_0's maddubs + madd become one
// vpdpbusd, the K-quants' per-sub-block scale multiply and i32 add one vpdpwssd. Q8_0 and
// Q4_K/Q5_K stay 256 bits wide (their 512-bit forms measured slower: the joins of 32-byte
// halves and the scale broadcasts all need the one shuffle port 512-bit code has); Q6_K
// takes two sub-block pairs per zmm. Only the float accumulation of the exact block sums
// may differ from the AVX2 kernels. vec_dot and dot_multi share one template, so a row's
// value does not depend on how many activation rows it was computed with (the GEMM's
// batch invariance).
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12's own _mm512_undefined_* (see kernels/cpu/ops_avx512.cpp)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <type_traits>

#include "quant/blocks.h"
#include "quant/count_dispatch.h"
#include "quant/kernels_impl.h"

namespace squeeze::quant::impl {
namespace {

// Own copies of the small helpers (not quant/avx2_common.h's): an inline function shared
// with the AVX2 translation units could be emitted here out of line, compiled for
// AVX-512, and the linker may keep that copy for their calls too, which an AVX2-only CPU
// cannot run. Here they have internal linkage.
constexpr int kPrefetchBytes = 2048;  // as the AVX2 kernels (quant/avx2_common.h)

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }

template <int Bytes>
inline void prefetch_ahead(const void* p) {
  for (int o = 0; o < Bytes; o += 64) _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes + o, _MM_HINT_T0);
}

// ---- F32 / F16 / BF16 weights, f32 activations ----

enum class Kind { F32, F16, BF16 };

template <Kind K>
inline __m512 load16(const void* w, int64_t i, __mmask16 m) {
  if constexpr (K == Kind::F32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(w) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(w) + i);
    if constexpr (K == Kind::F16) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// Two accumulators per activation row hide the FMA latency; the tail is one masked step.
template <Kind K, int NT>
void float_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  const float* y[NT];
  __m512 acc0[NT], acc1[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const float*>(static_cast<const char*>(a) + t * stride);
    acc0[t] = acc1[t] = _mm512_setzero_ps();
  }
  const __mmask16 all = 0xFFFF;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 w0 = load16<K>(w, i, all), w1 = load16<K>(w, i + 16, all);
    for (int t = 0; t < NT; ++t) {
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(y[t] + i), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(y[t] + i + 16), acc1[t]);
    }
  }
  for (; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? all : static_cast<__mmask16>((1u << left) - 1);
    const __m512 w0 = load16<K>(w, i, m);
    for (int t = 0; t < NT; ++t) acc0[t] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, y[t] + i), acc0[t]);
  }
  for (int t = 0; t < NT; ++t) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
}

// ---- Q8_0 × Q8_0 ----

// One block per ymm, two accumulator chains: VNNI's vpdpbusd replaces the AVX2 kernel's
// maddubs + madd pair. (Two blocks per zmm measured 1.5× slower: the joins, mask and
// scale broadcasts all compete for the two ports that run 512-bit operations.)
template <int NT>
void q8_0_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y[NT];
  __m256 acc[NT], acc2[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const char*>(a) + t * stride);
    acc[t] = acc2[t] = _mm256_setzero_ps();
  }
  auto step = [&](int64_t i, __m256* acc_row) {
    const __m256i q = load(x[i].qs);
    const __m256i aq = _mm256_sign_epi8(q, q);  // |q| as u8 (−128 → 128)
    const float dx = half(x[i].d);
    for (int t = 0; t < NT; ++t) {
      const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aq, _mm256_sign_epi8(load(y[t][i].qs), q));
      acc_row[t] = _mm256_fmadd_ps(_mm256_set1_ps(dx * half(y[t][i].d)), _mm256_cvtepi32_ps(p), acc_row[t]);
    }
  };
  const int64_t nb = n / kQK;
  int64_t i = 0;
  for (; i + 2 <= nb; i += 2) {
    prefetch_ahead<64>(x + i);
    step(i, acc);
    step(i + 1, acc2);
  }
  if (i < nb) step(i, acc);
  for (int t = 0; t < NT; ++t) out[t] = hsum(_mm256_add_ps(acc[t], acc2[t]));
}

// ---- Q4_K / Q5_K × Q8_K ----

// VNNI's vpdpwssd fuses the per-sub-block scale multiply and the i32 add (maddubs + dpwssd
// per 32 codes instead of maddubs + madd + add). Kept 256 bits wide: a 512-bit form (two
// chunks per zmm) measured slower, its joins of activation halves running on the one
// shuffle port.
inline __m256i accumulate_scaled(__m256i acc, __m256i p16, __m256i scale) { return _mm256_dpwssd_epi32(acc, p16, scale); }

#include "quant/q45k_rows.h"

// ---- Q6_K × Q8_K ----

// u = q + 32 in [0, 63] from 4 low bits (ql) and 2 high bits (qh); each 64-byte half of
// the activation pairs with one zmm of codes whose 128-bit lane j is a 16-element
// sub-block, scaled by one i16 scale. The −32 offset is removed once per block as
// 32·Σ scale_j·bsum_j, exactly as the AVX2 kernel does.
template <int NT>
void q6k_rows(int64_t n, const void* w, const void* a, int64_t stride, float* out) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* y[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    y[t] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(a) + t * stride);
    acc[t] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30);
  // Scale index of each i16 lane for codes u01 / u23 of half h = 0 (add 8 for h = 1).
  const __m512i lane_scale = _mm512_srli_epi16(
      _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,
                       7, 6, 5, 4, 3, 2, 1, 0),
      3);
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_ahead<sizeof(BlockQ6_K)>(x + i);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)));
    const __m512i sc = _mm512_castsi256_si512(sc16);
    __m512i sumi[NT];
    for (int t = 0; t < NT; ++t) {
      const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load(y[t][i].bsums)), 5);
      sumi[t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_zextsi256_si512(off));
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m512i l = load64(x[i].ql + 64 * h);
      const __m256i qh = load(x[i].qh + 32 * h);
      const __m512i qh01 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_slli_epi16(qh, 4)), _mm256_slli_epi16(qh, 2), 1);
      const __m512i qh23 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
      const __m512i u01 = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(qh01, m2));
      const __m512i u23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(qh23, m2));
      const __m512i idx01 = _mm512_add_epi16(lane_scale, _mm512_set1_epi16(static_cast<int16_t>(8 * h)));
      const __m512i s01 = _mm512_permutexvar_epi16(idx01, sc);
      const __m512i s23 = _mm512_permutexvar_epi16(_mm512_add_epi16(idx01, _mm512_set1_epi16(4)), sc);
      for (int t = 0; t < NT; ++t) {
        const int8_t* yq = y[t][i].qs + 128 * h;
        sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_maddubs_epi16(u01, load64(yq)), s01);
        sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_maddubs_epi16(u23, load64(yq + 64)), s23);
      }
    }
    const float d = half(x[i].d);
    for (int t = 0; t < NT; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(d * y[t][i].d), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
  }
  for (int t = 0; t < NT; ++t) out[t] = _mm512_reduce_add_ps(acc[t]);
}

template <int NT>
void f32_rows(int64_t n, const void* w, const void* a, int64_t s, float* o) {
  float_rows<Kind::F32, NT>(n, w, a, s, o);
}
template <int NT>
void f16_rows(int64_t n, const void* w, const void* a, int64_t s, float* o) {
  float_rows<Kind::F16, NT>(n, w, a, s, o);
}
template <int NT>
void bf16_rows(int64_t n, const void* w, const void* a, int64_t s, float* o) {
  float_rows<Kind::BF16, NT>(n, w, a, s, o);
}
template <int NT>
void q4k_rows(int64_t n, const void* w, const void* a, int64_t s, float* o) {
  q45k_rows<false, NT>(n, w, a, s, o);
}
template <int NT>
void q5k_rows(int64_t n, const void* w, const void* a, int64_t s, float* o) {
  q45k_rows<true, NT>(n, w, a, s, o);
}

}  // namespace

#define SQZ_AVX512_DOT(T, ROWS)                                                                     \
  float avx512_dot_##T(int64_t n, const void* w, const void* a) {                                    \
    float r;                                                                                         \
    ROWS<1>(n, w, a, 0, &r);                                                                         \
    return r;                                                                                        \
  }                                                                                                  \
  void avx512_multi_##T(int64_t n, const void* w, const void* a, int64_t s, int nt, float* out) {    \
    dispatch_count(nt, [&](auto k) { ROWS<decltype(k)::value>(n, w, a, s, out); });                  \
  }

SQZ_AVX512_DOT(f32, f32_rows)
SQZ_AVX512_DOT(f16, f16_rows)
SQZ_AVX512_DOT(bf16, bf16_rows)
SQZ_AVX512_DOT(q8_0, q8_0_rows)
SQZ_AVX512_DOT(q4_k, q4k_rows)
SQZ_AVX512_DOT(q5_k, q5k_rows)
SQZ_AVX512_DOT(q6_k, q6k_rows)
#undef SQZ_AVX512_DOT

}  // namespace squeeze::quant::impl
