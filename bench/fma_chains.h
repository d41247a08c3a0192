// bench/fma_chains.h — the f32 FMA peak probe shared by the benchmarks that state their
// figures as a fraction of it (bench_machine, bench_vision_encoder): 12 independent FMA
// chains per thread, enough to cover 2 FMA ports x 4-5 cycles of latency, kept in
// registers; the value returned keeps the compiler from dropping them.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace squeeze::bench {

// One body for both widths (a macro: target-specific intrinsics cannot pass through a
// template's function parameters without an ABI change).
#define SQUEEZE_FMA_CHAINS(V, SET1, FMA)                                   \
  V a[12];                                                                \
  for (int j = 0; j < 12; ++j) a[j] = SET1(0.1f * static_cast<float>(j)); \
  const V m = SET1(0.999999f), c = SET1(1e-7f);                           \
  for (int64_t it = 0; it < iters; ++it) {                                \
    _Pragma("GCC unroll 12") for (int j = 0; j < 12; ++j) a[j] = FMA(a[j], m, c); \
  }                                                                       \
  for (int j = 1; j < 12; ++j) a[0] = FMA(a[0], m, a[j]);                 \
  float out[sizeof(V) / sizeof(float)];                                   \
  __builtin_memcpy(out, &a[0], sizeof(V));                                \
  return out[0];

// `iters` rounds of 12 FMAs of 8 (AVX2) or 16 (AVX-512) lanes: 2 flops per lane each.
__attribute__((target("avx2,fma"))) inline float fma_chains_avx2(int64_t iters) {
  SQUEEZE_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps)
}
__attribute__((target("avx512f"))) inline float fma_chains_avx512(int64_t iters) {
  SQUEEZE_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps)
}
#undef SQUEEZE_FMA_CHAINS

}  // namespace squeeze::bench
