// bench/bench_machine.cpp — this machine's ceilings, the roofline every report uses:
// DRAM bandwidth (read-only sum, copy, STREAM triad) on 1 and 2 threads, and the peak
// f32 FMA rate per thread count. Arrays are 256 MiB so nothing stays in the 32 MiB L3.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <vector>

#include "core/aligned_buffer.h"
#include "core/thread_pool.h"

namespace {

using squeeze::AlignedBuffer;
using squeeze::ThreadPool;

constexpr size_t kBytes = size_t{256} << 20;
constexpr int64_t kFloats = static_cast<int64_t>(kBytes / sizeof(float));

struct Arrays {
  AlignedBuffer a{kBytes}, b{kBytes}, c{kBytes};
  Arrays() {
    for (auto* buf : {&a, &b, &c}) {
      float* p = buf->as<float>();
      for (int64_t i = 0; i < kFloats; ++i) p[i] = 1.0f + static_cast<float>(i % 7);
    }
  }
};

Arrays& arrays() {
  static Arrays arr;
  return arr;
}

// Reads [p, p+n) as 4 interleaved streams (quarters of the range walked side by side):
// one stream per thread leaves the memory system idle between prefetches, while weight
// matrices are read several rows at a time, so this is the ceiling kernels compare to.
__attribute__((target("avx2,fma"))) float sum_range(const float* p, int64_t n) {
  const int64_t q = (n / 4) & ~int64_t{31};
  const float *s0p = p, *s1p = p + q, *s2p = p + 2 * q, *s3p = p + 3 * q;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
  for (int64_t i = 0; i + 16 <= q; i += 16) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(s0p + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(s1p + i));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(s2p + i));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(s3p + i));
    t0 = _mm256_add_ps(t0, _mm256_load_ps(s0p + i + 8));
    t1 = _mm256_add_ps(t1, _mm256_load_ps(s1p + i + 8));
    t2 = _mm256_add_ps(t2, _mm256_load_ps(s2p + i + 8));
    t3 = _mm256_add_ps(t3, _mm256_load_ps(s3p + i + 8));
  }
  for (int64_t i = 4 * q; i + 8 <= n; i += 8) s0 = _mm256_add_ps(s0, _mm256_loadu_ps(p + i));
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)),
                           _mm256_add_ps(_mm256_add_ps(t0, t1), _mm256_add_ps(t2, t3)));
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

// Splits [0, kFloats) into 64-float-aligned parts, one per thread.
template <typename F>
void over_threads(ThreadPool& pool, F&& f) {
  pool.run_on_all([&](int t, int nt) {
    const int64_t chunk = (kFloats / nt) & ~int64_t{63};
    const int64_t b = chunk * t, e = (t == nt - 1) ? kFloats : b + chunk;
    f(b, e);
  });
}

void BM_read_bandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* a = arrays().a.as<float>();
  for (auto _ : state) {
    std::vector<float> partial(static_cast<size_t>(pool.size()));
    over_threads(pool, [&](int64_t b, int64_t e) { partial[static_cast<size_t>(b * pool.size() / kFloats)] = sum_range(a + b, e - b); });
    benchmark::DoNotOptimize(partial.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBytes));
}

void BM_copy_bandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* a = arrays().a.as<float>();
  float* c = arrays().c.as<float>();
  for (auto _ : state) {
    over_threads(pool, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) c[i] = a[i];
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * static_cast<int64_t>(kBytes));
}

void BM_triad_bandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* b_ = arrays().b.as<float>();
  const float* c_ = arrays().c.as<float>();
  float* a_ = arrays().a.as<float>();
  for (auto _ : state) {
    over_threads(pool, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) a_[i] = b_[i] + 3.0f * c_[i];
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * static_cast<int64_t>(kBytes));
}

// 12 independent FMA chains per thread (named registers, so nothing spills): enough to
// cover 2 FMA ports x 4-5 cycles of latency.
__attribute__((target("avx2,fma"))) float fma_chains(int64_t iters) {
  __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(0.1f), a2 = _mm256_set1_ps(0.2f), a3 = _mm256_set1_ps(0.3f);
  __m256 a4 = _mm256_set1_ps(0.4f), a5 = _mm256_set1_ps(0.5f), a6 = _mm256_set1_ps(0.6f), a7 = _mm256_set1_ps(0.7f);
  __m256 a8 = _mm256_set1_ps(0.8f), a9 = _mm256_set1_ps(0.9f), a10 = _mm256_set1_ps(1.0f), a11 = _mm256_set1_ps(1.1f);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    a0 = _mm256_fmadd_ps(a0, m, c); a1 = _mm256_fmadd_ps(a1, m, c); a2 = _mm256_fmadd_ps(a2, m, c);
    a3 = _mm256_fmadd_ps(a3, m, c); a4 = _mm256_fmadd_ps(a4, m, c); a5 = _mm256_fmadd_ps(a5, m, c);
    a6 = _mm256_fmadd_ps(a6, m, c); a7 = _mm256_fmadd_ps(a7, m, c); a8 = _mm256_fmadd_ps(a8, m, c);
    a9 = _mm256_fmadd_ps(a9, m, c); a10 = _mm256_fmadd_ps(a10, m, c); a11 = _mm256_fmadd_ps(a11, m, c);
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)),
                                               _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11))));
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0];
}

void BM_fma_peak(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  constexpr int64_t kIters = 1 << 20;
  for (auto _ : state) {
    pool.run_on_all([&](int, int) { benchmark::DoNotOptimize(fma_chains(kIters)); });
  }
  // 12 chains x 8 lanes x 2 flops per FMA, on every thread
  state.counters["flops"] = benchmark::Counter(static_cast<double>(state.iterations()) * kIters * 12 * 8 * 2 * pool.size(),
                                               benchmark::Counter::kIsRate);
}

BENCHMARK(BM_read_bandwidth)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_copy_bandwidth)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_triad_bandwidth)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fma_peak)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
