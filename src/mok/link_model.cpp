// mok/link_model.cpp — see link_model.h.
#include "mok/link_model.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/error.h"

namespace squeeze::mok {

LinkModel link_preset(const std::string& name) {
  if (name == "none") return {};
  if (name == "nvlink") return {"nvlink", 1.0, 160.0};
  if (name == "ib") return {"ib", 2.0, 50.0};
  fail("unknown link model '", name, "' (expected none, nvlink or ib)");
}

LinkModelTransport::LinkModelTransport(Transport& inner, LinkModel model)
    : in_(inner),
      model_(std::move(model)),
      alpha_(std::chrono::nanoseconds(static_cast<int64_t>(std::llround(model_.latency_us * 1e3)))),
      ns_per_byte_(model_.gbps > 0 ? 1.0 / model_.gbps : 0.0),
      link_free_(size_t(inner.size())),
      last_put_done_(size_t(inner.size())) {
  SQZ_CHECK(model_.latency_us >= 0 && model_.latency_us <= 1e6 && std::isfinite(model_.latency_us),
            "link model: latency ", model_.latency_us, " µs must be in [0, 1e6]");
  SQZ_CHECK(model_.gbps > 0 && std::isfinite(model_.gbps), "link model: bandwidth ", model_.gbps, " GB/s must be > 0");
  set_timeout(inner.timeout());
}

void LinkModelTransport::wait_until(Clock::time_point t) {
  const auto start = Clock::now();
  if (start >= t) return;
  while (Clock::now() < t) std::this_thread::yield();  // µs precision; yields to other ranks
  stats_.waited_s += std::chrono::duration<double>(Clock::now() - start).count();
}

LinkModelTransport::Clock::time_point LinkModelTransport::book(int peer, size_t bytes, bool round_trip) {
  const auto now = Clock::now();
  auto& link = link_free_[size_t(peer)];
  const auto start = std::max(now, link);
  const auto busy = std::chrono::nanoseconds(static_cast<int64_t>(std::llround(double(bytes) * ns_per_byte_)));
  link = start + busy;
  return start + busy + (round_trip ? 2 * alpha_ : alpha_);
}

void LinkModelTransport::get(void* dst, int rank, SymBuffer b, size_t offset, size_t bytes) {
  in_.get(dst, rank, b, offset, bytes);
  if (rank == this->rank()) return;
  ++stats_.gets, stats_.remote_bytes += bytes;
  pending_done_ = std::max(pending_done_, book(rank, bytes, true));
}

void LinkModelTransport::put(int rank, SymBuffer b, size_t offset, const void* src, size_t bytes) {
  in_.put(rank, b, offset, src, bytes);
  if (rank == this->rank()) return;
  ++stats_.puts, stats_.remote_bytes += bytes;
  const auto done = book(rank, bytes, false);
  last_put_done_[size_t(rank)] = std::max(last_put_done_[size_t(rank)], done);
  pending_done_ = std::max(pending_done_, done);
}

void LinkModelTransport::flush() {
  wait_until(pending_done_);
  in_.flush();
}

void LinkModelTransport::flag_add(int rank, FlagId f, int64_t index, uint64_t v) {
  if (rank != this->rank()) {
    ++stats_.flag_updates;
    // Delivered α after issue, and never before the puts issued before it to that peer.
    const auto arrive = std::max(book(rank, 8, false), last_put_done_[size_t(rank)]);
    wait_until(arrive);
  }
  in_.flag_add(rank, f, index, v);
}

uint64_t LinkModelTransport::flag_load(int rank, FlagId f, int64_t index) {
  if (rank != this->rank()) {
    ++stats_.flag_reads;
    wait_until(book(rank, 8, true));
  }
  return in_.flag_load(rank, f, index);
}

void LinkModelTransport::barrier() {
  // A dissemination barrier: ceil(log2 R) rounds of one message each way.
  const int R = size();
  int rounds = 0;
  while ((1 << rounds) < R) ++rounds;
  in_.barrier();
  wait_until(Clock::now() + rounds * alpha_);
}

void LinkModelTransport::allreduce(double* values, int64_t n, ReduceOp op) {
  const int R = size();
  int rounds = 0;
  while ((1 << rounds) < R) ++rounds;
  in_.allreduce(values, n, op);
  wait_until(Clock::now() + 2 * rounds * alpha_);
}

}  // namespace squeeze::mok
