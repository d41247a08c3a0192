// core/thread_pool.h — persistent workers, parallel_for and a barrier.
//
// Workers are created once and wait for jobs by spinning briefly, then sleeping;
// the calling thread takes part as thread 0, so a pool of size N starts N-1
// threads. A call from inside a job, or while another thread's job holds the pool,
// runs inline on the caller (serially) instead of deadlocking.
//
// parallel_for tolerates a busy machine: its range is claimed in pieces (Static: each
// thread walks its own contiguous share in eighths, then takes what is left of the
// others'), and the caller does not wait for a worker that has not started — once every
// piece is claimed it closes the job, and a worker that wakes later skips it. So a
// worker descheduled by another process costs at most the piece it holds, not its
// whole share of every kernel.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <algorithm>
#include <type_traits>
#include <vector>

namespace squeeze {

// parallel_for's options. At namespace scope (ThreadPool names them Schedule and
// ForOptions) because clang before 16 rejects the default argument `ForOptions options = {}`
// of a class nested in the class that declares it (the fuzz build uses clang 14).
enum class ParallelSchedule { Static, Dynamic };
struct ParallelForOptions {
  ParallelSchedule schedule = ParallelSchedule::Static;
  int64_t grain = 1;  // chunk size for Dynamic; Static chunks are multiples of it
};

class ThreadPool {
 public:
  using Schedule = ParallelSchedule;
  using ForOptions = ParallelForOptions;

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
  // Waits for every worker, descheduled or not (parallel_for does not).
  template <typename F>
  void run_on_all(F&& fn);

  // Waits until every thread of the current run_on_all job has reached it.
  void barrier();

 private:
  using Trampoline = void (*)(void* ctx, int thread_index, int n_threads);
  // every_thread: the job needs all n threads (run_on_all); otherwise it is work-shared
  // and may finish with the threads that joined. prepare(ctx, 0, n) runs once the job
  // owns the pool (and not at all when the job runs inline).
  void execute(Trampoline trampoline, void* ctx, bool every_thread, Trampoline prepare = nullptr);
  void worker_loop(int thread_index);
  void run_job_as(int thread_index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one job at a time; other callers run inline

  // Job publication: written before generation_ is bumped.
  Trampoline trampoline_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  // Entry to the current job: (generation << kEntryGenShift) | closed bit | workers that
  // joined. A worker joins only the generation it saw, and only while it is open.
  static constexpr uint64_t kEntryClosed = uint64_t{1} << 20;
  static constexpr int kEntryGenShift = 21;
  std::atomic<uint64_t> entry_{0};
  std::atomic<int64_t> left_{0};  // workers that joined and have finished the job
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

  // parallel_for's claim cursors, one per thread (cache-line apart), reused by every job.
  struct alignas(64) Cursor {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
    int64_t step = 1;
  };
  std::unique_ptr<Cursor[]> cursors_;
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
  execute(trampoline, const_cast<void*>(static_cast<const void*>(&fn)), true);
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
  struct Ctx {
    ThreadPool* pool;
    std::remove_reference_t<F>* fn;
    int64_t begin, end, grain;
    bool is_static;
  } ctx{this, &fn, begin, end, grain, options.schedule == Schedule::Static};
  // Static: thread t's share is the t-th of nt equal runs of grain chunks, walked in
  // eighths (rounded to the grain). Dynamic: one shared cursor stepping by the grain.
  auto prepare = [](void* c, int, int nt) {
    const Ctx& x = *static_cast<Ctx*>(c);
    Cursor* cur = x.pool->cursors_.get();
    if (!x.is_static) {
      cur[0].next.store(x.begin, std::memory_order_relaxed);
      cur[0].end = x.end;
      cur[0].step = x.grain;
      for (int t = 1; t < nt; ++t) cur[t].end = 0, cur[t].next.store(0, std::memory_order_relaxed);
      return;
    }
    const int64_t n_chunks = (x.end - x.begin + x.grain - 1) / x.grain;
    for (int t = 0; t < nt; ++t) {
      const int64_t c0 = n_chunks * t / nt, c1 = n_chunks * (t + 1) / nt;
      cur[t].next.store(x.begin + c0 * x.grain, std::memory_order_relaxed);
      cur[t].end = std::min(x.end, x.begin + c1 * x.grain);
      cur[t].step = std::max<int64_t>(1, (c1 - c0 + 7) / 8) * x.grain;
    }
  };
  auto run = [](void* c, int t, int nt) {
    const Ctx& x = *static_cast<Ctx*>(c);
    if (nt == 1) {  // inline: the cursors may belong to another caller's job
      (*x.fn)(x.begin, x.end);
      return;
    }
    Cursor* cur = x.pool->cursors_.get();
    for (int k = 0; k < nt; ++k) {  // own share first, then the others'
      Cursor& from = cur[(t + k) % nt];
      for (;;) {
        const int64_t b = from.next.fetch_add(from.step, std::memory_order_relaxed);
        if (b >= from.end) break;
        (*x.fn)(b, std::min(from.end, b + from.step));
      }
    }
  };
  execute(run, &ctx, false, prepare);
}

}  // namespace squeeze
