// tests/core/test_thread_pool.cpp — coverage, contention, nesting, barriers, errors.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"

namespace squeeze {
namespace {

// Every index of [begin, end) is visited exactly once.
void check_cover(ThreadPool& pool, int64_t begin, int64_t end, ThreadPool::ForOptions opt) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(std::max<int64_t>(end, 0)) + 1);
  pool.parallel_for(begin, end, [&](int64_t b, int64_t e) {
    ASSERT_LE(begin, b);
    ASSERT_LE(e, end);
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  }, opt);
  for (int64_t i = 0; i < static_cast<int64_t>(hits.size()); ++i)
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), (i >= begin && i < end) ? 1 : 0) << "index " << i;
}

TEST(ThreadPool, CoversRangesExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 7, 31, 33, 1000, 4097})
      for (int64_t grain : {1, 3, 64})
        for (auto sched : {ThreadPool::Schedule::Static, ThreadPool::Schedule::Dynamic}) {
          check_cover(pool, 0, n, {sched, grain});
          check_cover(pool, n / 3, n, {sched, grain});
        }
  }
}

// A worker that stalls inside its first piece (as if descheduled by another process)
// holds up only that piece: the caller takes the rest of the worker's static share.
TEST(ThreadPool, StalledWorkerLosesOnlyThePieceItHolds) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  for (auto sched : {ThreadPool::Schedule::Static, ThreadPool::Schedule::Dynamic}) {
    std::atomic<int> by_caller{0}, stalls{0};
    pool.parallel_for(0, 64, [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() == caller) {
        by_caller.fetch_add(static_cast<int>(e - b));
      } else if (stalls.fetch_add(1) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }, {sched, 1});
    // Static pieces are eighths of a share (4 of 64 items); Dynamic pieces are single items.
    EXPECT_GE(by_caller.load(), sched == ThreadPool::Schedule::Static ? 60 : 63) << "caller did " << by_caller.load();
  }
}

TEST(ThreadPool, UsesAllThreadsForStaticWork) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> seen(3);
  pool.run_on_all([&](int t, int n) {
    ASSERT_EQ(n, 3);
    seen[static_cast<size_t>(t)].fetch_add(1);
  });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(ThreadPool, ManyCallersAtOnceGetCorrectResults) {
  ThreadPool pool(2);
  constexpr int kCallers = 4, kRounds = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        const int64_t n = 100 + (r * 37 + c * 11) % 900;
        std::atomic<int64_t> sum{0};
        pool.parallel_for(0, n, [&](int64_t b, int64_t e) {
          int64_t local = 0;
          for (int64_t i = b; i < e; ++i) local += i;
          sum.fetch_add(local);
        }, {r % 2 ? ThreadPool::Schedule::Dynamic : ThreadPool::Schedule::Static, 16});
        if (sum.load() != n * (n - 1) / 2) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(0, 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(0, 100, [&](int64_t b2, int64_t e2) { total.fetch_add(e2 - b2); });
  });
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPool, BarrierSeparatesPhases) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::vector<int> stage(static_cast<size_t>(threads), 0);
    std::atomic<int> violations{0};
    pool.run_on_all([&](int t, int n) {
      for (int phase = 1; phase <= 50; ++phase) {
        stage[static_cast<size_t>(t)] = phase;
        pool.barrier();
        for (int u = 0; u < n; ++u)
          if (stage[static_cast<size_t>(u)] != phase) violations.fetch_add(1);
        pool.barrier();
      }
    });
    EXPECT_EQ(violations.load(), 0) << threads << " threads";
  }
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(0, 100, [](int64_t b, int64_t) {
    if (b > 0) fail("boom at ", b);
  }, {ThreadPool::Schedule::Static, 1}), Error);
  // the pool stays usable afterwards
  std::atomic<int> n{0};
  pool.parallel_for(0, 10, [&](int64_t b, int64_t e) { n.fetch_add(static_cast<int>(e - b)); });
  EXPECT_EQ(n.load(), 10);
}

TEST(ThreadPool, IdlePoolWakesFromSleep) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers past their spin phase
  std::atomic<int> n{0};
  pool.run_on_all([&](int, int) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 2);
}

TEST(ThreadPool, DefaultPoolIsSettable) {
  set_default_thread_count(3);
  EXPECT_EQ(default_thread_pool().size(), 3);
  set_default_thread_count(0);
  EXPECT_GE(default_thread_pool().size(), 1);
}

}  // namespace
}  // namespace squeeze
