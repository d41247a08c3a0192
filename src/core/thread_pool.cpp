// core/thread_pool.cpp
#include "core/thread_pool.h"

#include <memory>

#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SQZ_PAUSE() _mm_pause()
#else
#define SQZ_PAUSE() ((void)0)
#endif

namespace squeeze {

namespace {
// ~0.2-0.5 ms of spinning before sleeping: long enough to cover the serial gaps
// between kernels of one forward pass, short enough not to burn a core when idle.
constexpr int kSpinIterations = 1 << 14;
}  // namespace

namespace detail {
bool& in_pool_job() {
  thread_local bool flag = false;
  return flag;
}
int& job_width() {
  thread_local int width = 0;
  return width;
}
}  // namespace detail

ThreadPool::ThreadPool(int n_threads) {
  n_threads_ = n_threads > 0 ? n_threads : cpu_features().logical_cores;
  cursors_ = std::make_unique<Cursor[]>(static_cast<size_t>(n_threads_));
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(sleep_mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_workers_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_job_as(int thread_index) {
  detail::in_pool_job() = true;
  detail::job_width() = job_threads_;
  try {
    trampoline_(ctx_, thread_index, job_threads_);
  } catch (...) {
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
  detail::in_pool_job() = false;
  detail::job_width() = 0;
}

void ThreadPool::worker_loop(int thread_index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < kSpinIterations; ++i) {
      SQZ_PAUSE();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock lock(sleep_mutex_);
      sleeping_workers_.fetch_add(1);
      wake_workers_.wait(lock, [&] { return generation_.load() != seen; });
      sleeping_workers_.fetch_sub(1);
      g = generation_.load();
    }
    seen = g;
    if (stop_.load()) return;
    // Join job g unless the caller has closed it (it did all the work while this thread
    // was not running) or a later job has replaced it (picked up on the next turn).
    uint64_t e = entry_.load(std::memory_order_acquire);
    bool joined = false;
    while ((e >> kEntryGenShift) == (g & (~uint64_t{0} >> kEntryGenShift)) && !(e & kEntryClosed)) {
      if (entry_.compare_exchange_weak(e, e + 1, std::memory_order_acq_rel)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    run_job_as(thread_index);
    left_.fetch_add(1);  // seq_cst: pairs with the caller_sleeping_ store in execute
    if (caller_sleeping_.load()) {
      std::lock_guard lock(sleep_mutex_);
      wake_caller_.notify_one();
    }
  }
}

void ThreadPool::execute(Trampoline trampoline, void* ctx, bool every_thread, Trampoline prepare) {
  std::unique_lock call_lock(call_mutex_, std::try_to_lock);
  if (n_threads_ == 1 || detail::in_pool_job() || !call_lock.owns_lock()) {
    // Inline: the caller is the only thread of this job.
    struct Restore {
      bool in_job;
      int width;
      ~Restore() {
        detail::in_pool_job() = in_job;
        detail::job_width() = width;
      }
    } restore{detail::in_pool_job(), detail::job_width()};
    detail::in_pool_job() = true;
    detail::job_width() = 1;
    trampoline(ctx, 0, 1);
    return;
  }
  if (prepare) prepare(ctx, 0, n_threads_);
  trampoline_ = trampoline;
  ctx_ = ctx;
  job_threads_ = n_threads_;
  error_ = nullptr;
  const uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
  left_.store(0, std::memory_order_relaxed);
  entry_.store((gen & (~uint64_t{0} >> kEntryGenShift)) << kEntryGenShift, std::memory_order_release);
  generation_.store(gen);  // seq_cst: pairs with the sleeping_workers_ check in worker_loop
  if (sleeping_workers_.load() > 0) {
    std::lock_guard lock(sleep_mutex_);
    wake_workers_.notify_all();
  }
  run_job_as(0);
  // A work-shared job is done once its pieces are: close it to workers that have not
  // joined yet and wait only for those inside. run_on_all waits for every worker.
  const int64_t expected = every_thread
                               ? n_threads_ - 1
                               : static_cast<int64_t>(entry_.fetch_or(kEntryClosed) & (kEntryClosed - 1));
  for (int i = 0; left_.load(std::memory_order_acquire) != expected && i < kSpinIterations; ++i) SQZ_PAUSE();
  if (left_.load(std::memory_order_acquire) != expected) {
    std::unique_lock lock(sleep_mutex_);
    caller_sleeping_.store(true);
    wake_caller_.wait(lock, [&] { return left_.load() == expected; });
    caller_sleeping_.store(false);
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::barrier() {
  if (detail::job_width() <= 1) return;  // inline job: nobody else to wait for
  const uint64_t gen = barrier_generation_.load(std::memory_order_acquire);
  if (barrier_arrived_.fetch_add(1, std::memory_order_acq_rel) == job_threads_ - 1) {
    barrier_arrived_.store(0, std::memory_order_relaxed);
    barrier_generation_.fetch_add(1, std::memory_order_release);
    return;
  }
  for (int i = 0; barrier_generation_.load(std::memory_order_acquire) == gen; ++i) {
    if (i < kSpinIterations) SQZ_PAUSE();
    else std::this_thread::yield();  // oversubscribed: let the late thread run
  }
}


namespace {
std::unique_ptr<ThreadPool>& default_pool_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
std::mutex& default_pool_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

ThreadPool& default_thread_pool() {
  std::lock_guard lock(default_pool_mutex());
  auto& slot = default_pool_slot();
  if (!slot) slot = std::make_unique<ThreadPool>(0);
  return *slot;
}

void set_default_thread_count(int n_threads) {
  std::lock_guard lock(default_pool_mutex());
  auto& slot = default_pool_slot();
  const int want = n_threads > 0 ? n_threads : cpu_features().logical_cores;
  if (slot && slot->size() == want) return;
  slot.reset();
  slot = std::make_unique<ThreadPool>(want);
}

}  // namespace squeeze
