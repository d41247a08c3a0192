// bench/bench_machine.cpp — this machine's ceilings, the roofline every report uses:
// DRAM read bandwidth, write-mixed bandwidth (copy, in-place update, STREAM triad), the
// peak f32 FMA rate and the peak 8-bit integer dot rate, on 1 and 2 threads. Each array
// is at least 4x the L3 (and at least 256 MiB): a VM may report a large shared L3 (480 MiB
// here), and a working set that partly fits in it reads faster than DRAM, which would
// flatter every ceiling.
// SQUEEZE_PROBE_MIB overrides the size.
//
// A ceiling must bound every kernel measured against it, so each one is the best of
// several probes (as STREAM-like tools do), and report.py takes the maximum over the
// probes of a kind: reads are walked as 1, 2, 4, 8 and 16 interleaved streams per
// thread, with AVX2 and, where the CPU has it, AVX-512 loads; writes are counted with the
// write-allocate read that a store to a line not yet in cache costs (copy moves 3 lines
// per line written, triad 4, an in-place update 3); FMA peaks use the widest vectors the
// CPU has, since OpenBLAS uses them.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "fma_chains.h"
#include "core/aligned_buffer.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace {

using squeeze::AlignedBuffer;
using squeeze::ThreadPool;

// 4x the L3, at least 256 MiB, at most an eighth of memory (three arrays), in whole MiB.
size_t probe_bytes() {
  constexpr size_t kMiB = size_t{1} << 20;
  if (const char* env = std::getenv("SQUEEZE_PROBE_MIB")) {
    const long mib = std::atol(env);
    if (mib >= 16) return static_cast<size_t>(mib) * kMiB;
  }
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t bytes = std::max<size_t>(256 * kMiB, l3 > 0 ? 4 * static_cast<size_t>(l3) : 0);
  if (pages > 0 && page > 0) bytes = std::min(bytes, static_cast<size_t>(pages) * static_cast<size_t>(page) / 8);
  return bytes / kMiB * kMiB;
}

const size_t kBytes = probe_bytes();
const int64_t kFloats = static_cast<int64_t>(kBytes / sizeof(float));

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

// Sums [p, p+n) walked as S interleaved streams (S equal parts read side by side), two
// accumulators per stream so the adds never limit the loads.
template <int S>
__attribute__((target("avx2,fma"))) float sum_streams_avx2(const float* p, int64_t n) {
  const int64_t q = (n / S) & ~int64_t{15};
  __m256 acc[2 * S];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t i = 0; i < q; i += 16) {
#pragma GCC unroll 16
    for (int s = 0; s < S; ++s) {
      acc[2 * s] = _mm256_add_ps(acc[2 * s], _mm256_load_ps(p + s * q + i));
      acc[2 * s + 1] = _mm256_add_ps(acc[2 * s + 1], _mm256_load_ps(p + s * q + i + 8));
    }
  }
  __m256 t = _mm256_setzero_ps();
  for (auto& a : acc) t = _mm256_add_ps(t, a);
  alignas(32) float out[8];
  _mm256_store_ps(out, t);
  float r = 0;
  for (float x : out) r += x;
  for (int64_t i = S * q; i < n; ++i) r += p[i];
  return r;
}

template <int S>
__attribute__((target("avx512f"))) float sum_streams_avx512(const float* p, int64_t n) {
  const int64_t q = (n / S) & ~int64_t{31};
  __m512 acc[2 * S];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t i = 0; i < q; i += 32) {
#pragma GCC unroll 16
    for (int s = 0; s < S; ++s) {
      acc[2 * s] = _mm512_add_ps(acc[2 * s], _mm512_load_ps(p + s * q + i));
      acc[2 * s + 1] = _mm512_add_ps(acc[2 * s + 1], _mm512_load_ps(p + s * q + i + 16));
    }
  }
  __m512 t = _mm512_setzero_ps();
  for (auto& a : acc) t = _mm512_add_ps(t, a);
  float r = _mm512_reduce_add_ps(t);
  for (int64_t i = S * q; i < n; ++i) r += p[i];
  return r;
}

// Splits [0, kFloats) into 64-float-aligned parts, one per thread.
template <typename F>
void over_threads(ThreadPool& pool, F&& f) {
  pool.run_on_all([&](int t, int nt) {
    const int64_t chunk = (kFloats / nt) & ~int64_t{63};
    const int64_t b = chunk * t, e = (t == nt - 1) ? kFloats : b + chunk;
    f(t, b, e);
  });
}

using SumFn = float (*)(const float*, int64_t);

void read_bandwidth(benchmark::State& state, SumFn sum) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* a = arrays().a.as<float>();
  std::vector<float> partial(static_cast<size_t>(pool.size()));
  for (auto _ : state) {
    over_threads(pool, [&](int t, int64_t b, int64_t e) { partial[static_cast<size_t>(t)] = sum(a + b, e - b); });
    benchmark::DoNotOptimize(partial.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBytes));
}

// The write-mixed probes, each written with AVX2 and unrolled so that the probe, not
// the loop, is what limits: a compiler-vectorised SSE loop was beaten by the AVX2 add
// kernel with the same streams.
// c = a: 1 read, 1 write + its write-allocate read.
__attribute__((target("avx2,fma"))) void copy_range(const float* a, float* c, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 32 <= e; i += 32) {
#pragma GCC unroll 4
    for (int j = 0; j < 32; j += 8) _mm256_store_ps(c + i + j, _mm256_load_ps(a + i + j));
  }
  for (; i < e; ++i) c[i] = a[i];
}
// a += s * b: 2 reads, 1 write to a line already read (no write-allocate), like axpy.
__attribute__((target("avx2,fma"))) void update_range(float* a, const float* b_, int64_t b, int64_t e) {
  const __m256 s = _mm256_set1_ps(1e-9f);
  int64_t i = b;
  for (; i + 32 <= e; i += 32) {
#pragma GCC unroll 4
    for (int j = 0; j < 32; j += 8)
      _mm256_store_ps(a + i + j, _mm256_fmadd_ps(s, _mm256_load_ps(b_ + i + j), _mm256_load_ps(a + i + j)));
  }
  for (; i < e; ++i) a[i] += 1e-9f * b_[i];
}
// a = b + s * c: 2 reads, 1 write + its write-allocate read, like the add/mul kernels.
__attribute__((target("avx2,fma"))) void triad_range(float* a, const float* b_, const float* c_, int64_t b, int64_t e) {
  const __m256 s = _mm256_set1_ps(3.0f);
  int64_t i = b;
  for (; i + 32 <= e; i += 32) {
#pragma GCC unroll 4
    for (int j = 0; j < 32; j += 8)
      _mm256_store_ps(a + i + j, _mm256_fmadd_ps(s, _mm256_load_ps(c_ + i + j), _mm256_load_ps(b_ + i + j)));
  }
  for (; i < e; ++i) a[i] = b_[i] + 3.0f * c_[i];
}

void BM_copy_bandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* a = arrays().a.as<float>();
  float* c = arrays().c.as<float>();
  for (auto _ : state) {
    over_threads(pool, [&](int, int64_t b, int64_t e) { copy_range(a, c, b, e); });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * static_cast<int64_t>(kBytes));
}

void BM_update_bandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* b_ = arrays().b.as<float>();
  float* a_ = arrays().a.as<float>();
  for (auto _ : state) {
    over_threads(pool, [&](int, int64_t b, int64_t e) { update_range(a_, b_, b, e); });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * static_cast<int64_t>(kBytes));
}

void BM_triad_bandwidth(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  const float* b_ = arrays().b.as<float>();
  const float* c_ = arrays().c.as<float>();
  float* a_ = arrays().a.as<float>();
  for (auto _ : state) {
    over_threads(pool, [&](int, int64_t b, int64_t e) { triad_range(a_, b_, c_, b, e); });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 4 * static_cast<int64_t>(kBytes));
}

using squeeze::bench::fma_chains_avx2;
using squeeze::bench::fma_chains_avx512;

void fma_peak(benchmark::State& state, float (*chains)(int64_t), int lanes) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  constexpr int64_t kIters = 1 << 20;
  for (auto _ : state) {
    pool.run_on_all([&](int, int) { benchmark::DoNotOptimize(chains(kIters)); });
  }
  // 12 chains x lanes x 2 flops per FMA, on every thread
  state.counters["flops"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kIters * 12 * lanes * 2 * pool.size(), benchmark::Counter::kIsRate);
}

// The 8-bit integer dot peak the packed kernels (src/quant/packed_*.cpp) are measured
// against: 12 independent accumulator chains per thread of AVX2 `vpmaddubsw` + `vpaddw`
// (32 multiply-adds per pair, the AVX2 kernels' inner step) or AVX-512 VNNI `vpdpbusd`
// (64 per instruction); 2 integer ops per multiply-add.
#define SQUEEZE_INT8_CHAINS(V, SET1, STEP)                                          \
  V acc[12];                                                                       \
  for (int j = 0; j < 12; ++j) acc[j] = SET1(static_cast<char>(j));                \
  V w = SET1(3), a = SET1(5);                                                      \
  for (int64_t it = 0; it < iters; ++it) {                                         \
    _Pragma("GCC unroll 12") for (int j = 0; j < 12; ++j) acc[j] = STEP(acc[j], w, a); \
    asm volatile("" : "+v"(w));                                                    \
  }                                                                                \
  int out[sizeof(V) / sizeof(int)];                                                \
  __builtin_memcpy(out, &acc[0], sizeof(V));                                       \
  int s = out[0];                                                                  \
  for (int j = 1; j < 12; ++j) {                                                   \
    __builtin_memcpy(out, &acc[j], sizeof(V));                                     \
    s += out[0];                                                                   \
  }                                                                                \
  return s;

__attribute__((target("avx2"))) inline __m256i maddubs_step(__m256i acc, __m256i w, __m256i a) {
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(w, a));
}
__attribute__((target("avx2"))) int int8_chains_avx2(int64_t iters) {
  SQUEEZE_INT8_CHAINS(__m256i, _mm256_set1_epi8, maddubs_step)
}
__attribute__((target("avx512f,avx512vnni"))) int int8_chains_vnni(int64_t iters) {
  SQUEEZE_INT8_CHAINS(__m512i, _mm512_set1_epi8, _mm512_dpbusd_epi32)
}
#undef SQUEEZE_INT8_CHAINS

void int8_peak(benchmark::State& state, int (*chains)(int64_t), int macs_per_step) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  constexpr int64_t kIters = 1 << 20;
  for (auto _ : state) {
    pool.run_on_all([&](int, int) { benchmark::DoNotOptimize(chains(kIters)); });
  }
  state.counters["int_ops"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kIters * 12 * macs_per_step * 2 * pool.size(), benchmark::Counter::kIsRate);
}

void register_all() {
  const bool avx512 = squeeze::cpu_features().avx512f;
  auto reg = [](const std::string& name, auto fn) {
    // Repetitions: report.py keeps the best one, since a ceiling is what the machine can
    // do when nothing else runs, and one descheduled thread halves a 2-thread figure.
    benchmark::RegisterBenchmark(name.c_str(), fn)->Arg(1)->Arg(2)->Repetitions(5)->UseRealTime()->Unit(
        benchmark::kMillisecond);
  };
  const std::pair<int, SumFn> avx2_patterns[] = {{1, sum_streams_avx2<1>}, {2, sum_streams_avx2<2>},
                                                 {4, sum_streams_avx2<4>}, {8, sum_streams_avx2<8>},
                                                 {16, sum_streams_avx2<16>}};
  for (auto [s, fn] : avx2_patterns)
    reg("BM_read_bandwidth_avx2_streams" + std::to_string(s), [fn = fn](benchmark::State& st) { read_bandwidth(st, fn); });
  if (avx512) {
    const std::pair<int, SumFn> avx512_patterns[] = {{1, sum_streams_avx512<1>}, {4, sum_streams_avx512<4>},
                                                     {8, sum_streams_avx512<8>}};
    for (auto [s, fn] : avx512_patterns)
      reg("BM_read_bandwidth_avx512_streams" + std::to_string(s), [fn = fn](benchmark::State& st) { read_bandwidth(st, fn); });
  }
  reg("BM_copy_bandwidth", BM_copy_bandwidth);
  reg("BM_update_bandwidth", BM_update_bandwidth);
  reg("BM_triad_bandwidth", BM_triad_bandwidth);
  reg("BM_fma_peak_avx2", [](benchmark::State& st) { fma_peak(st, fma_chains_avx2, 8); });
  if (avx512) reg("BM_fma_peak_avx512", [](benchmark::State& st) { fma_peak(st, fma_chains_avx512, 16); });
  reg("BM_int8_peak_avx2", [](benchmark::State& st) { int8_peak(st, int8_chains_avx2, 32); });
  if (squeeze::cpu_features().has_avx512_vnni())
    reg("BM_int8_peak_avx512_vnni", [](benchmark::State& st) { int8_peak(st, int8_chains_vnni, 64); });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::AddCustomContext("probe_array_mib", std::to_string(kBytes >> 20));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
