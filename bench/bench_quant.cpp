// bench/bench_quant.cpp — quantized GEMV (GB/s of weight bytes, rotating over enough
// matrices that the weights far exceed the 32 MiB L3), GEMM (GFLOP/s at batch 64 and
// 512) and the single-row dot of each ISA, for every weight type.
//
//   build/release/bench/bench_quant --benchmark_filter=Gemv --benchmark_min_time=1
// Gemv*/Bandwidth use the default pool (2 threads here), timed in real time; the *1T
// variants run one thread timed in CPU time, for a shared, noisy machine.
#include <benchmark/benchmark.h>
#include <emmintrin.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/thread_pool.h"
#include "quant/matmul.h"
#include "quant/packed.h"
#include "quant/quantize.h"

namespace {

using namespace squeeze;
using quant::GgmlType;

constexpr GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                               GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                               GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::MXFP4};
// Rotate over at least this many weight bytes (8× the L3) so each GEMV reads from DRAM.
constexpr size_t kRotateBytes = size_t{256} << 20;

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// A matrix filled by repeating 64 genuinely quantized rows (realistic codes and scales;
// quantizing the whole matrix with the searching quantizer would dominate the run).
AlignedBuffer make_matrix(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  const int64_t rb = quant::row_bytes(type, cols), seed_rows = 64;
  const auto src = gaussian(static_cast<size_t>(seed_rows * cols), seed);
  const auto q = quant::quantize_tensor({.type = type, .src = src.data(), .rows = seed_rows, .cols = cols});
  AlignedBuffer m(static_cast<size_t>(rows * rb));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(m.as<uint8_t>() + r * rb, q.data() + (r % seed_rows) * rb, rb);
  return m;
}

// The machine's read bandwidth with the pool's threads (SSE2 sum over 256 MiB): the
// ceiling a GEMV's weight stream is compared with (% = Gemv GB/s / this).
// One thread: a private pool of 1 (the caller), measured in CPU time, which stays
// meaningful on a machine whose cores are shared with other work (real time does not).
ThreadPool& pool_for(benchmark::State& state) {
  static ThreadPool single(1);
  return state.range(0) == 1 ? single : default_thread_pool();
}

void BM_ReadBandwidth(benchmark::State& state) {
  const size_t bytes = kRotateBytes;
  AlignedBuffer buf(bytes);
  std::memset(buf.data(), 1, bytes);
  ThreadPool& pool = pool_for(state);
  const int64_t n = static_cast<int64_t>(bytes / 64);
  for (auto _ : state) {
    pool.parallel_for(0, n, [&](int64_t b, int64_t e) {
      const auto* p = buf.as<__m128i>();
      __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t i = b; i < e; ++i) {
        s0 = _mm_add_epi64(s0, _mm_load_si128(p + 4 * i));
        s1 = _mm_add_epi64(s1, _mm_load_si128(p + 4 * i + 1));
        s2 = _mm_add_epi64(s2, _mm_load_si128(p + 4 * i + 2));
        s3 = _mm_add_epi64(s3, _mm_load_si128(p + 4 * i + 3));
      }
      const __m128i s = _mm_add_epi64(_mm_add_epi64(s0, s1), _mm_add_epi64(s2, s3));
      benchmark::DoNotOptimize(s);
    }, {ThreadPool::Schedule::Static, 1024});
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations(), benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  state.counters["threads"] = pool.size();
}
BENCHMARK(BM_ReadBandwidth)->Name("Bandwidth/read")->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadBandwidth)->Name("Bandwidth1T/read")->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Gemv(benchmark::State& state, GgmlType type, int64_t rows, int64_t cols, bool packed) {
  const size_t bytes = static_cast<size_t>(packed ? quant::packed_bytes(type, rows, cols)
                                                  : rows * quant::row_bytes(type, cols));
  const size_t count = std::max<size_t>(2, (kRotateBytes + bytes - 1) / bytes);
  std::vector<AlignedBuffer> mats;
  mats.push_back(make_matrix(type, rows, cols, 1));
  AlignedBuffer first_packed;
  if (packed) {
    first_packed = AlignedBuffer(bytes);
    quant::pack_matrix(type, mats[0].data(), rows, cols, first_packed.data());
  }
  const uint8_t* src = static_cast<const uint8_t*>(packed ? first_packed.data() : mats[0].data());
  for (size_t i = 1; i < count; ++i) {  // copies: same content, distinct memory
    AlignedBuffer m(bytes);
    std::memcpy(m.data(), src, bytes);
    mats.push_back(std::move(m));
  }
  if (packed) mats[0] = std::move(first_packed);
  const auto x = gaussian(static_cast<size_t>(cols), 7);
  std::vector<float> y(static_cast<size_t>(rows));
  ThreadPool& pool = pool_for(state);
  size_t i = 0;
  for (auto _ : state) {
    quant::QMatrix W{type, mats[i].data(), rows, cols};
    if (packed) W.packed = W.data;  // the packed kernels read only .packed
    quant::gemv(pool, W, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % mats.size();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations(), benchmark::Counter::kIsRate,
                                              benchmark::Counter::kIs1000);
  state.counters["threads"] = pool.size();
}

// packed: the weights repacked for the integer tile (quant/packed.h), as model loading does.
void BM_Gemm(benchmark::State& state, GgmlType type, int64_t M, bool packed) {
  const int64_t rows = 4096, cols = 4096;
  const AlignedBuffer w = make_matrix(type, rows, cols, 3);
  quant::QMatrix W{type, w.data(), rows, cols};
  AlignedBuffer p;
  if (packed) {
    p = AlignedBuffer(static_cast<size_t>(quant::packed_bytes(type, rows, cols)));
    quant::pack_matrix(type, w.data(), rows, cols, p.data());
    W.packed = p.data();
  }
  const auto X = gaussian(static_cast<size_t>(M * cols), 5);
  std::vector<float> Y(static_cast<size_t>(M * rows));
  ThreadPool& pool = default_thread_pool();
  for (auto _ : state) {
    quant::gemm(pool, W, {.X = X.data(), .M = M, .Y = Y.data()});
    benchmark::DoNotOptimize(Y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * rows * cols * state.iterations(), benchmark::Counter::kIsRate,
                                                 benchmark::Counter::kIs1000);
}

// One 4096-element row dot, data in L1: the kernel's compute speed per ISA.
void BM_Dot(benchmark::State& state, GgmlType type, quant::Isa isa) {
  const quant::QuantTraits* t = quant::traits_for(type, isa);
  if (!t) {
    state.SkipWithError("ISA not available");
    return;
  }
  const int64_t n = 4096;
  const auto x = gaussian(n, 11), a = gaussian(n, 13);
  std::vector<uint8_t> w(quant::row_bytes(type, n)), act;
  t->quantize_row(x.data(), w.data(), n, nullptr);
  const void* ap = a.data();
  if (t->dot_type != GgmlType::F32) {
    act.resize(quant::row_bytes(t->dot_type, n));
    quant::traits_for(t->dot_type, isa)->quantize_act_row(a.data(), act.data(), n);
    ap = act.data();
  }
  for (auto _ : state) benchmark::DoNotOptimize(t->vec_dot(n, w.data(), ap));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w.size()) * state.iterations(),
                                              benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

const bool kRegistered = [] {
  for (GgmlType type : kTypes) {
    const std::string name = quant::traits(type).name;
    for (bool packed : {false, true}) {
      if (packed && !quant::packs(type)) continue;
      const std::string tag = name + (packed ? "+packed" : "");
      std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096}, {14336, 4096}};
      if (type == GgmlType::MXFP4) shapes.emplace_back(2880, 2880);  // one gpt-oss expert
      for (auto [rows, cols] : shapes)
        benchmark::RegisterBenchmark(("Gemv/" + tag + "/" + std::to_string(rows) + "x" + std::to_string(cols)).c_str(),
                                     BM_Gemv, type, rows, cols, packed)
            ->Arg(0)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      benchmark::RegisterBenchmark(("Gemv1T/" + tag + "/4096x4096").c_str(), BM_Gemv, type, int64_t{4096},
                                   int64_t{4096}, packed)
          ->Arg(1)
          ->Unit(benchmark::kMicrosecond);
    }
    for (bool packed : {false, true}) {
      if (packed && !quant::packs(type)) continue;
      for (int64_t M : {4, 64, 512})
        benchmark::RegisterBenchmark(
            ("Gemm/" + name + (packed ? "+packed" : "") + "/M" + std::to_string(M)).c_str(), BM_Gemm, type, M, packed)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
    for (auto isa : kernels::cpu::available_isas())
      benchmark::RegisterBenchmark(("Dot/" + name + "/" + kernels::cpu::isa_name(isa)).c_str(), BM_Dot, type, isa);
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
