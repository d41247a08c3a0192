// kernels/cpu/avx2_math.h — vector exp/sigmoid for the AVX2 kernels (include only
// from translation units compiled with -mavx2 -mfma).
#pragma once

#include <immintrin.h>

namespace squeeze::kernels::cpu::avx2 {

// exp(x), relative error about 2e-7 over [-87.3, 88.7]; inputs are clamped to that
// range, so results below ~1.2e-38 are returned as 1.2e-38 rather than as denormals.
inline __m256 exp(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33654f)), _mm256_set1_ps(88.72283f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n*ln2, with ln2 split in two so the product is exact enough.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  // exp(r) on |r| <= ln2/2 by a degree-6 minimax polynomial (Cephes expf).
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // scale by 2^n through the exponent field; n in [-126, 128] -> split 2^128 as 2^127*2
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_min_epi32(ni, _mm256_set1_epi32(127));
  const __m256i n2 = _mm256_sub_epi32(ni, n1);  // 0 or 1
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// 1 / (1 + exp(-x)), computed without overflow for large |x|.
inline __m256 sigmoid(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// Mask with the first `n` (0..8) lanes set, for loads/stores of row tails.
inline __m256i tail_mask(int64_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
}

// Loads and stores of a whole vector, and of a row tail (masked). Masked stores are slow
// on some CPUs (microcoded on AMD Zen), so loops use them for the tail only.
struct WholeIo {
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static __m256 keep(__m256 v, float) { return v; }
};
struct TailIo {
  __m256i m;
  __m256 load(const float* p) const { return _mm256_maskload_ps(p, m); }
  void store(float* p, __m256 v) const { _mm256_maskstore_ps(p, m, v); }
  // v in the tail's lanes, `fill` in the others (for reductions).
  __m256 keep(__m256 v, float fill) const { return _mm256_blendv_ps(_mm256_set1_ps(fill), v, _mm256_castsi256_ps(m)); }
};

// f(i, io) for i = 0, 8, 16, ... < n: io is WholeIo for full vectors, TailIo for the last
// partial one.
template <typename F>
inline void for_each8(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) f(i, WholeIo{});
  if (i < n) f(i, TailIo{tail_mask(n - i)});
}

}  // namespace squeeze::kernels::cpu::avx2
