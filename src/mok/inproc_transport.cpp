// mok/inproc_transport.cpp — the threads-as-ranks transport.
#include "mok/inproc_transport.h"

#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace squeeze::mok {
namespace {

constexpr int kMaxAllocations = 256;
constexpr int64_t kMaxFlags = 1 << 14;  // per rank

struct World {
  explicit World(int n) : n_ranks(n), flags(static_cast<size_t>(n)), contrib(static_cast<size_t>(n)) {
    for (auto& f : flags) f = std::make_unique<std::atomic<uint64_t>[]>(size_t(kMaxFlags));
  }
  int n_ranks;
  std::mutex mutex;
  // Slot k holds allocation k of every rank; created by the first rank to reach it.
  std::array<std::vector<std::unique_ptr<std::byte[]>>, kMaxAllocations> buffers;
  std::array<size_t, kMaxAllocations> sizes{};
  std::vector<std::unique_ptr<std::atomic<uint64_t>[]>> flags;
  std::vector<std::vector<double>> contrib;  // allreduce staging, one per rank
};

class InProcTransport final : public Transport {
 public:
  InProcTransport(World& w, int rank) : w_(w), rank_(rank) {
    barrier_slots_ = alloc_flags(w.n_ranks);
  }
  int rank() const override { return rank_; }
  int size() const override { return w_.n_ranks; }
  std::string name() const override { return "inproc"; }

  SymBuffer alloc(size_t bytes) override {
    const int id = n_alloc_++;
    SQZ_CHECK(id < kMaxAllocations, "inproc transport: more than ", kMaxAllocations, " symmetric buffers");
    std::lock_guard<std::mutex> lock(w_.mutex);
    auto& slot = w_.buffers[size_t(id)];
    if (slot.empty()) {
      for (int r = 0; r < w_.n_ranks; ++r) slot.emplace_back(new std::byte[bytes == 0 ? 1 : bytes]());
      w_.sizes[size_t(id)] = bytes;
    }
    SQZ_CHECK(w_.sizes[size_t(id)] == bytes, "inproc transport: rank ", rank_, " allocates ", bytes,
              " bytes as buffer ", id, " but another rank allocated ", w_.sizes[size_t(id)]);
    return {id, bytes};
  }
  FlagId alloc_flags(int64_t n) override {
    SQZ_CHECK(n >= 0 && n_flags_ + n <= kMaxFlags, "inproc transport: out of flags");
    FlagId f{n_flags_};
    n_flags_ += n;
    return f;
  }
  std::byte* local(SymBuffer b) override { return ptr(rank_, b, 0, 0); }
  const std::byte* peer(int rank, SymBuffer b) override { return ptr(rank, b, 0, 0); }
  void get(void* dst, int rank, SymBuffer b, size_t off, size_t n) override {
    if (n) std::memcpy(dst, ptr(rank, b, off, n), n);
  }
  void put(int rank, SymBuffer b, size_t off, const void* src, size_t n) override {
    if (n) std::memcpy(ptr(rank, b, off, n), src, n);
  }
  void flush() override {}
  void flag_add(int rank, FlagId f, int64_t i, uint64_t v) override {
    flag(rank, f, i).fetch_add(v, std::memory_order_release);
  }
  uint64_t flag_load(int rank, FlagId f, int64_t i) override { return flag(rank, f, i).load(std::memory_order_acquire); }
  void barrier() override { flag_barrier(barrier_slots_, barrier_generation_); }
  void allreduce(double* v, int64_t n, ReduceOp op) override {
    w_.contrib[size_t(rank_)].assign(v, v + n);
    barrier();
    for (int64_t i = 0; i < n; ++i) {
      double acc = w_.contrib[0][size_t(i)];
      for (int r = 1; r < w_.n_ranks; ++r) {
        const double x = w_.contrib[size_t(r)][size_t(i)];
        acc = op == ReduceOp::Sum ? acc + x : std::max(acc, x);
      }
      v[i] = acc;
    }
    barrier();  // nobody overwrites its contribution while others still read it
  }

 private:
  std::byte* ptr(int rank, SymBuffer b, size_t off, size_t n) {
    SQZ_CHECK(rank >= 0 && rank < w_.n_ranks, "inproc transport: rank ", rank, " out of range");
    SQZ_CHECK(b.id >= 0 && b.id < n_alloc_ && off + n <= w_.sizes[size_t(b.id)], "inproc transport: access [", off,
              ", ", off + n, ") outside buffer ", b.id);
    return w_.buffers[size_t(b.id)][size_t(rank)].get() + off;
  }
  std::atomic<uint64_t>& flag(int rank, FlagId f, int64_t i) {
    SQZ_CHECK(rank >= 0 && rank < w_.n_ranks && f.index >= 0 && f.index + i < n_flags_, "inproc transport: flag ",
              f.index + i, " on rank ", rank, " out of range");
    return w_.flags[size_t(rank)][size_t(f.index + i)];
  }

  World& w_;
  int rank_;
  int n_alloc_ = 0;
  int64_t n_flags_ = 0;
  FlagId barrier_slots_;
  uint64_t barrier_generation_ = 0;
};

}  // namespace

std::vector<std::exception_ptr> run_inproc_ranks(int n_ranks, const std::function<void(Transport&)>& fn,
                                                 std::chrono::milliseconds timeout) {
  SQZ_CHECK(n_ranks >= 1 && n_ranks <= 256, "inproc transport: ", n_ranks, " ranks (expected 1..256)");
  World world(n_ranks);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n_ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < n_ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        InProcTransport t(world, r);
        t.set_timeout(timeout);
        fn(t);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void run_inproc_ranks_or_throw(int n_ranks, const std::function<void(Transport&)>& fn,
                               std::chrono::milliseconds timeout) {
  auto errors = run_inproc_ranks(n_ranks, fn, timeout);
  for (int r = 0; r < n_ranks; ++r) {
    if (!errors[size_t(r)]) continue;
    try {
      std::rethrow_exception(errors[size_t(r)]);
    } catch (const Error& e) {
      throw e.with_context("rank " + std::to_string(r));
    }
  }
}

}  // namespace squeeze::mok
