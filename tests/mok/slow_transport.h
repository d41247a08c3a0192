// tests/mok/slow_transport.h — a Transport that delays one rank's reads, so a rank
// that could republish a buffer too early has the time to do it before the slow rank
// reads (a reuse race then shows up as wrong data, not only under ThreadSanitizer).
#pragma once

#include <chrono>
#include <thread>

#include "mok/transport.h"

namespace squeeze::mok::testing {

class SlowTransport final : public Transport {
 public:
  // Rank `slow` of `inner` sleeps `delay` before each get() and local().
  SlowTransport(Transport& inner, int slow, std::chrono::microseconds delay)
      : in_(inner), slow_(inner.rank() == slow), delay_(delay) {
    set_timeout(inner.timeout());
  }
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  std::string name() const override { return in_.name(); }
  SymBuffer alloc(size_t bytes) override { return in_.alloc(bytes); }
  FlagId alloc_flags(int64_t n) override { return in_.alloc_flags(n); }
  std::byte* local(SymBuffer b) override {
    pause();
    return in_.local(b);
  }
  const std::byte* peer(int rank, SymBuffer b) override {
    pause();
    return in_.peer(rank, b);
  }
  void get(void* dst, int rank, SymBuffer b, size_t off, size_t n) override {
    pause();
    in_.get(dst, rank, b, off, n);
  }
  void put(int rank, SymBuffer b, size_t off, const void* src, size_t n) override { in_.put(rank, b, off, src, n); }
  void flush() override { in_.flush(); }
  void flag_add(int rank, FlagId f, int64_t i, uint64_t v) override { in_.flag_add(rank, f, i, v); }
  uint64_t flag_load(int rank, FlagId f, int64_t i) override { return in_.flag_load(rank, f, i); }
  void barrier() override { in_.barrier(); }
  void allreduce(double* v, int64_t n, ReduceOp op) override { in_.allreduce(v, n, op); }

 private:
  void pause() const {
    if (slow_) std::this_thread::sleep_for(delay_);
  }
  Transport& in_;
  bool slow_;
  std::chrono::microseconds delay_;
};

}  // namespace squeeze::mok::testing
