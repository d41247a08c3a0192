// quant/avx2_common.h — small AVX2 helpers shared by the dot_*_avx2.cpp translation
// units (include only from files compiled with squeeze_isa_sources(avx2 ...)).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace squeeze::quant::avx2 {

// Software prefetch distance for weight streams: ~100 ns of DRAM latency at ~10 GB/s
// per core is ~1 KiB in flight; twice that leaves room for the hardware prefetcher.
inline constexpr int kPrefetchBytes = 2048;

// Prefetches the `bytes` bytes (rounded up to lines) that lie kPrefetchBytes ahead of p.
template <int Bytes>
inline void prefetch_ahead(const void* p) {
  for (int o = 0; o < Bytes; o += 64) _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes + o, _MM_HINT_T0);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hsum(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Signed i8 × i8 products summed in groups of four into i32 lanes, via the u8×i8
// maddubs: |a| times b with a's sign moved onto b. Exact for a != -128.
inline __m256i dot_i8_i32(__m256i a, __m256i b) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

}  // namespace squeeze::quant::avx2
