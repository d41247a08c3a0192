// core/thread_pool.h — persistent workers, parallel_for and a barrier.
//
// Workers are created once and wait for jobs by spinning briefly, then sleeping;
// the calling thread takes part as thread 0, so a pool of size N starts N-1
// threads. A call from inside a job, or while another thread's job holds the pool,
// runs inline on the caller (serially) instead of deadlocking.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <algorithm>
#include <type_traits>
#include <vector>

namespace squeeze {

class ThreadPool {
 public:
  enum class Schedule { Static, Dynamic };
  struct ForOptions {
    Schedule schedule = Schedule::Static;
    int64_t grain = 1;  // chunk size for Dynamic; Static chunks are multiples of it
  };

  // n_threads <= 0: one per logical core.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end).
  // Exceptions thrown by fn are rethrown here (the first one) after all threads finish.
  template <typename F>
  void parallel_for(int64_t begin, int64_t end, F&& fn, ForOptions options = {});

  // Calls fn(thread_index, n_threads) once on each thread; barrier() may be used inside.
  template <typename F>
  void run_on_all(F&& fn);

  // Waits until every thread of the current run_on_all job has reached it.
  void barrier();

 private:
  using Trampoline = void (*)(void* ctx, int thread_index, int n_threads);
  struct Job;
  void execute(Trampoline trampoline, void* ctx);
  void worker_loop(int thread_index);
  void run_job_as(int thread_index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one job at a time; other callers run inline

  // Job publication: written before generation_ is bumped.
  Trampoline trampoline_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::mutex error_mutex_;

  // Sleeping after the spin phase.
  std::mutex sleep_mutex_;
  std::condition_variable wake_workers_;
  std::condition_variable wake_caller_;
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};

  // Barrier state (sense-reversing).
  std::atomic<int> barrier_arrived_{0};
  std::atomic<uint64_t> barrier_generation_{0};
  int job_threads_ = 1;
};

// The process-wide pool used by kernels and models.
ThreadPool& default_thread_pool();
// Sets the default pool's size (<= 0: one per core); replaces the pool if it exists.
// Call only while no job is running on it.
void set_default_thread_count(int n_threads);

// ---- template implementation ----------------------------------------------------

namespace detail {
// True on a thread currently executing a pool job (used to run nested calls inline).
bool& in_pool_job();
// Number of threads in the job this thread is executing (1 inline, 0 outside any job).
int& job_width();
}  // namespace detail

template <typename F>
void ThreadPool::run_on_all(F&& fn) {
  using Fn = std::remove_reference_t<F>;
  auto trampoline = [](void* ctx, int thread_index, int n) { (*static_cast<Fn*>(ctx))(thread_index, n); };
  execute(trampoline, const_cast<void*>(static_cast<const void*>(&fn)));
}

template <typename F>
void ThreadPool::parallel_for(int64_t begin, int64_t end, F&& fn, ForOptions options) {
  if (end <= begin) return;
  const int64_t grain = options.grain < 1 ? 1 : options.grain;
  const int64_t n = end - begin;
  if (n <= grain || n_threads_ == 1 || detail::in_pool_job()) {
    fn(begin, end);
    return;
  }
  if (options.schedule == Schedule::Static) {
    run_on_all([&](int t, int nt) {
      const int64_t n_chunks = (n + grain - 1) / grain;
      const int64_t c0 = n_chunks * t / nt, c1 = n_chunks * (t + 1) / nt;
      const int64_t b = begin + c0 * grain, e = std::min(end, begin + c1 * grain);
      if (b < e) fn(b, e);
    });
  } else {
    std::atomic<int64_t> next{begin};
    run_on_all([&](int, int) {
      for (;;) {
        const int64_t b = next.fetch_add(grain, std::memory_order_relaxed);
        if (b >= end) break;
        fn(b, std::min(end, b + grain));
      }
    });
  }
}

}  // namespace squeeze
