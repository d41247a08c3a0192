// bench/bench_thread_pool.cpp — dispatch overhead of the persistent pool: the time of
// an empty parallel_for / run_on_all (target: under 5 us on this 2-core machine),
// against creating threads per call as the naive alternative.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace {

void BM_empty_parallel_for(benchmark::State& state) {
  squeeze::ThreadPool pool(static_cast<int>(state.range(0)));
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    pool.parallel_for(0, pool.size(), [&](int64_t b, int64_t e) { sink.fetch_add(e - b, std::memory_order_relaxed); });
  }
  benchmark::DoNotOptimize(sink.load());
}

void BM_empty_parallel_for_dynamic(benchmark::State& state) {
  squeeze::ThreadPool pool(static_cast<int>(state.range(0)));
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    pool.parallel_for(0, 64, [&](int64_t b, int64_t e) { sink.fetch_add(e - b, std::memory_order_relaxed); },
                      {squeeze::ThreadPool::Schedule::Dynamic, 4});
  }
  benchmark::DoNotOptimize(sink.load());
}

void BM_barrier(benchmark::State& state) {
  squeeze::ThreadPool pool(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    pool.run_on_all([&](int, int) {
      for (int i = 0; i < 10; ++i) pool.barrier();
    });
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 10);
}

void BM_spawn_threads_per_call(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    std::vector<std::thread> ts;
    for (int t = 1; t < n; ++t) ts.emplace_back([&] { sink.fetch_add(1); });
    sink.fetch_add(1);
    for (auto& t : ts) t.join();
  }
  benchmark::DoNotOptimize(sink.load());
}

BENCHMARK(BM_empty_parallel_for)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_empty_parallel_for_dynamic)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_barrier)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_spawn_threads_per_call)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
