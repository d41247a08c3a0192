// bench/bench_attention.cpp — one layer's attention over the KV cache: decode at depth
// (µs per step and GB/s of f16 K/V read) and a 512-token prefill (GFLOP/s). Shapes: the
// 70.5M llama race model's attention widened to heads of 128 (8 query heads, 4 KV heads)
// and the glimmer reference layer (32 query heads, 2 KV heads of 128).
//
// Decode rotates over as many layers' caches as make 256 MiB of K/V, so every step reads
// its layer from DRAM as a real model's decode does; a single 8–32 MiB cache would stay
// in the last-level cache and overstate the bandwidth.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/attention.h"
#include "model/kv_cache.h"

namespace {

using squeeze::kernels::cpu::AttentionParams;
using squeeze::kernels::cpu::AttentionTuning;
using squeeze::kernels::cpu::Isa;
using squeeze::model::KvCache;
using squeeze::model::KvCacheConfig;

std::vector<float> random_vector(size_t n) {
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// A cache of `layers` global layers, each filled with `n` positions of random K/V.
KvCache filled_cache(int64_t n_kv_heads, int64_t head_dim, int64_t n, int64_t layers = 1) {
  KvCache cache(KvCacheConfig{.n_kv_heads = n_kv_heads, .head_dim = head_dim,
                              .layer_windows = std::vector<int64_t>(static_cast<size_t>(layers), 0),
                              .context_limit = n});
  const auto k = random_vector(static_cast<size_t>(n * n_kv_heads * head_dim));
  for (int64_t l = 0; l < layers; ++l) cache.append(l, {.k = k.data(), .v = k.data(), .n = n});
  return cache;
}

constexpr double kRotatedKvBytes = 256.0 * (1 << 20);

// args: context, query heads, KV heads, scalar (1) or the active ISA (0), threads (0: the
// default pool). With 1 thread the CPU column is the kernel's own cost, free of scheduling
// noise on a shared machine.
void BM_AttentionDecode(benchmark::State& state) {
  const int64_t ctx = state.range(0), H = state.range(1), Hkv = state.range(2), D = 128;
  squeeze::ThreadPool single(1);
  const Isa scalar = Isa::Scalar;
  const AttentionTuning tuning{.isa = state.range(3) ? &scalar : nullptr};
  const double kv_bytes = 2.0 * static_cast<double>(ctx * Hkv * D) * 2.0;  // K and V of one layer, f16
  const auto layers = static_cast<int64_t>(std::ceil(kRotatedKvBytes / kv_bytes));
  const KvCache cache = filled_cache(Hkv, D, ctx, layers);
  const AttentionParams params{.n_heads = H, .n_kv_heads = Hkv, .head_dim = D};
  const auto q = random_vector(static_cast<size_t>(H * D));
  std::vector<float> out(q.size());
  auto& pool = state.range(4) == 1 ? single : squeeze::default_thread_pool();
  int64_t layer = 0;
  for (auto _ : state) {
    squeeze::kernels::cpu::attention(pool, params, cache.view(layer),
                                     {.q = q.data(), .out = out.data(), .n_queries = 1, .pos0 = ctx - 1}, tuning);
    benchmark::DoNotOptimize(out.data());
    layer = (layer + 1) % layers;
  }
  state.counters["KV_bytes/s"] = benchmark::Counter(kv_bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = pool.size();
  state.counters["layers"] = static_cast<double>(layers);
}
BENCHMARK(BM_AttentionDecode)
    ->ArgNames({"ctx", "H", "Hkv", "scalar", "threads"})
    ->Args({4096, 8, 4, 0, 0})
    ->Args({16384, 8, 4, 0, 0})
    ->Args({16384, 32, 2, 0, 0})
    ->Args({4096, 8, 4, 1, 0})
    ->Args({4096, 8, 4, 0, 1})
    ->Args({16384, 8, 4, 0, 1})
    ->Args({16384, 32, 2, 0, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: prompt tokens, query heads, KV heads, window (0 = global)
void BM_AttentionPrefill(benchmark::State& state) {
  const int64_t n = state.range(0), H = state.range(1), Hkv = state.range(2), window = state.range(3), D = 128;
  const KvCache cache = filled_cache(Hkv, D, n);
  const AttentionParams params{.n_heads = H, .n_kv_heads = Hkv, .head_dim = D, .window = window};
  const auto q = random_vector(static_cast<size_t>(n * H * D));
  std::vector<float> out(q.size());
  auto& pool = squeeze::default_thread_pool();
  for (auto _ : state) {
    squeeze::kernels::cpu::attention(pool, params, cache.view(0),
                                     {.q = q.data(), .out = out.data(), .n_queries = n, .pos0 = 0});
    benchmark::DoNotOptimize(out.data());
  }
  double keys = 0;  // Σ over queries of keys seen
  for (int64_t i = 0; i < n; ++i) keys += static_cast<double>(window > 0 && window < i + 1 ? window : i + 1);
  const double flops = 4.0 * static_cast<double>(H * D) * keys;  // q·k and p·v, 2 flops per multiply-add
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionPrefill)
    ->ArgNames({"n", "H", "Hkv", "window"})
    ->Args({512, 8, 4, 0})
    ->Args({512, 32, 2, 0})
    ->Args({512, 32, 2, 128})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
BENCHMARK_MAIN();
