// bench/bench_kernels.cpp — every f32 kernel, scalar reference vs AVX2, single thread:
// at 4096 elements (in L1/L2: compute-bound view) and at 16 Mi elements (64 MiB per
// operand, past the L3: bandwidth view); plus threaded GEMV over rotating 4096x4096
// matrices and GEMM (own tile vs OpenBLAS). Counters: bytes_per_second (the DRAM traffic
// of one call at 16 Mi elements: every pass over an operand, and for an output not read
// first the write-allocate read its stores cost, as bench_machine counts its probes) and
// flops. docs/benchmarks.md relates them to bench_machine's ceilings.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/parallel.h"

namespace {

using namespace squeeze::kernels::cpu;

const Ops& table(int64_t isa_arg) {
  const Ops* t = ops_for(static_cast<Isa>(isa_arg));
  return t ? *t : reference_ops();
}

std::vector<float> random_floats(int64_t n, float lo = -1, float hi = 1) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

void report(benchmark::State& state, double bytes_per_call, double flops_per_call) {
  const double it = static_cast<double>(state.iterations());
  state.counters["bytes_per_second"] = benchmark::Counter(it * bytes_per_call, benchmark::Counter::kIsRate);
  if (flops_per_call > 0) state.counters["flops"] = benchmark::Counter(it * flops_per_call, benchmark::Counter::kIsRate);
}

// args: {isa, n}
void BM_dot(benchmark::State& s) {
  const int64_t n = s.range(1);
  auto a = random_floats(n), b = random_floats(n);
  const auto& k = table(s.range(0));
  for (auto _ : s) benchmark::DoNotOptimize(k.dot(a.data(), b.data(), n));
  report(s, 8.0 * n, 2.0 * n);
}
void BM_axpy(benchmark::State& s) {
  const int64_t n = s.range(1);
  auto x = random_floats(n), y = random_floats(n);
  const auto& k = table(s.range(0));
  for (auto _ : s) {
    k.axpy(1e-9f, x.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  report(s, 12.0 * n, 2.0 * n);
}
void BM_rmsnorm(benchmark::State& s) {
  const int64_t n = s.range(1);
  auto x = random_floats(n), w = random_floats(n), y = random_floats(n);
  const auto& k = table(s.range(0));
  for (auto _ : s) {
    k.rmsnorm(x.data(), w.data(), y.data(), n, 1e-5f);
    benchmark::ClobberMemory();
  }
  report(s, 20.0 * n, 4.0 * n);  // x twice (sum of squares, then scale), w, y + write-allocate
}
void BM_rope(benchmark::State& s) {
  const int64_t n = s.range(1);  // n = heads * 128
  auto x = random_floats(n);
  const auto& k = table(s.range(0));
  RopeParams p{.n_heads = n / 128, .head_dim = 128, .rot_dim = 128, .position = 1000, .freq_base = 1e4f};
  for (auto _ : s) {
    k.rope(x.data(), p);
    benchmark::ClobberMemory();
  }
  report(s, 8.0 * n, 6.0 * n / 2);
}
void BM_softmax(benchmark::State& s) {
  const int64_t n = s.range(1);
  auto x0 = random_floats(n, -5, 5), x = x0;
  const auto& k = table(s.range(0));
  for (auto _ : s) {
    k.softmax(x.data(), n);
    benchmark::ClobberMemory();
  }
  report(s, 20.0 * n, 0);  // in place, 3 passes: read; read + write; read + write
}

#define UNARY_BENCH(NAME, CALL, BYTES)                             \
  void BM_##NAME(benchmark::State& s) {                            \
    const int64_t n = s.range(1);                                  \
    auto a = random_floats(n, -4, 4), b = random_floats(n), y = random_floats(n); \
    const auto& k = table(s.range(0));                             \
    for (auto _ : s) {                                             \
      CALL;                                                        \
      benchmark::ClobberMemory();                                  \
    }                                                              \
    report(s, (BYTES) * static_cast<double>(n), 0);                \
  }
// BYTES per element: inputs + output + the output's write-allocate read.
UNARY_BENCH(silu, k.silu(a.data(), y.data(), n), 12.0)
UNARY_BENCH(swiglu, k.swiglu(a.data(), b.data(), y.data(), n), 16.0)
UNARY_BENCH(gelu, k.gelu(a.data(), y.data(), n), 12.0)
UNARY_BENCH(add, k.add(a.data(), b.data(), y.data(), n), 16.0)
UNARY_BENCH(mul, k.mul(a.data(), b.data(), y.data(), n), 16.0)

void BM_f16_to_f32(benchmark::State& s) {
  const int64_t n = s.range(1);
  std::vector<uint16_t> h(static_cast<size_t>(n), 0x3c00);
  std::vector<float> y(static_cast<size_t>(n));
  const auto& k = table(s.range(0));
  for (auto _ : s) {
    k.f16_to_f32(h.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  report(s, 10.0 * n, 0);  // 2-byte input, 4-byte output + write-allocate
}
void BM_bf16_to_f32(benchmark::State& s) {
  const int64_t n = s.range(1);
  std::vector<uint16_t> h(static_cast<size_t>(n), 0x3f80);
  std::vector<float> y(static_cast<size_t>(n));
  const auto& k = table(s.range(0));
  for (auto _ : s) {
    k.bf16_to_f32(h.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  report(s, 10.0 * n, 0);  // 2-byte input, 4-byte output + write-allocate
}

void kernel_args(benchmark::internal::Benchmark* b) {
  for (int isa : {0, 1})
    for (int64_t n : {int64_t{4096}, int64_t{16} << 20}) b->Args({isa, n});
  b->ArgNames({"isa", "n"});
}
BENCHMARK(BM_dot)->Apply(kernel_args);
BENCHMARK(BM_axpy)->Apply(kernel_args);
BENCHMARK(BM_rmsnorm)->Apply(kernel_args);
BENCHMARK(BM_rope)->Apply(kernel_args);
BENCHMARK(BM_softmax)->Apply(kernel_args);
BENCHMARK(BM_silu)->Apply(kernel_args);
BENCHMARK(BM_swiglu)->Apply(kernel_args);
BENCHMARK(BM_gelu)->Apply(kernel_args);
BENCHMARK(BM_add)->Apply(kernel_args);
BENCHMARK(BM_mul)->Apply(kernel_args);
BENCHMARK(BM_f16_to_f32)->Apply(kernel_args);
BENCHMARK(BM_bf16_to_f32)->Apply(kernel_args);

// Threaded f32 GEMV, 4096x4096, rotating over 4 matrices (256 MiB) so each call streams
// its matrix from DRAM, as decode does with a model's weights. Arg: threads.
void BM_gemv_f32_rotating(benchmark::State& s) {
  constexpr int64_t kN = 4096, kMats = 4;
  squeeze::ThreadPool pool(static_cast<int>(s.range(0)));
  squeeze::AlignedBuffer mats(static_cast<size_t>(kMats * kN * kN) * sizeof(float));
  {
    auto v = random_floats(kN * kN);
    for (int64_t m = 0; m < kMats; ++m) std::copy(v.begin(), v.end(), mats.as<float>() + m * kN * kN);
  }
  auto x = random_floats(kN);
  std::vector<float> y(kN);
  int64_t i = 0;
  for (auto _ : s) {
    gemv(pool, mats.as<float>() + (i++ % kMats) * kN * kN, kN, x.data(), y.data(), kN, kN);
    benchmark::ClobberMemory();
  }
  report(s, 4.0 * kN * kN, 2.0 * kN * kN);
}
BENCHMARK(BM_gemv_f32_rotating)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// C[M,4096] = A[M,4096] . W[4096,4096]^T on 2 threads: args {backend (1 own 4x4 tile, 2 OpenBLAS,
// 3 packed panels: what prefill uses), M}.
void BM_gemm_f32(benchmark::State& s) {
  constexpr int64_t kN = 4096, kK = 4096;
  const int64_t M = s.range(1);
  squeeze::ThreadPool pool(2);
  auto A = random_floats(M * kK), W = random_floats(kN * kK);
  std::vector<float> C(static_cast<size_t>(M * kN));
  for (auto _ : s) {
    gemm_nt(pool, A.data(), kK, W.data(), kK, C.data(), kN, M, kN, kK, static_cast<GemmBackend>(s.range(0)));
    benchmark::ClobberMemory();
  }
  report(s, 4.0 * (M * kK + kN * kK + M * kN), 2.0 * M * kN * kK);
}
BENCHMARK(BM_gemm_f32)->Args({1, 64})->Args({2, 64})->Args({3, 64})->Args({1, 512})->Args({2, 512})->Args({3, 512})->ArgNames({"backend", "M"})
    ->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
