// mok/link_model.h — what one machine cannot show: a Transport that charges every remote
// operation the cost of a configured link, on top of a real transport (in-process or MPI).
//
// The model (per rank, per peer link): an operation of n bytes to a peer starts when that
// peer's link is free (per-peer serialization), occupies it n / β, and completes α later
// (α: one-way latency) for a put or a flag update, or 2α later for a get or a remote flag
// read (a round trip: request out, data back). get/put complete at flush(), which waits
// for the latest completion; a remote flag update is delivered after the puts issued
// before it to that peer (the release order) and α after it is issued; a remote flag read
// returns after its round trip, so a rank polling a remote flag pays 2α per poll, as an
// RDMA read loop does. The issuing rank waits for a flag update's delivery itself (a NIC
// would queue it): with one remote peer per rank (R = 2) this is the same time. Local
// operations (this rank's own memory) are free. Waits yield the CPU while they wait, so
// ranks may outnumber cores.
//
// Presets, bandwidths per direction from DeepEP's published measurements (its README: H800
// NVLink ~160 GB/s, ConnectX-7 400 Gb/s InfiniBand ~50 GB/s); one-way
// latencies are the usual orders of magnitude for a GPU store over NVLink (~1 µs) and a
// one-sided RDMA write across an InfiniBand switch (~2 µs) — parameters, not
// measurements: --link-latency-us and --link-gbps set them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "mok/transport.h"

namespace squeeze::mok {

struct LinkModel {
  std::string name = "none";  // "nvlink", "ib", "custom"; "none": no model
  double latency_us = 0;      // α, one way
  double gbps = 0;            // β, GB/s (1e9 bytes/s) per peer link and direction
  bool enabled() const { return name != "none"; }
};
// "none", "nvlink" or "ib"; anything else is a one-line error.
LinkModel link_preset(const std::string& name);

// Operations on other ranks' memory, as this rank issued them.
struct LinkStats {
  uint64_t gets = 0, puts = 0, flag_updates = 0;
  uint64_t flag_reads = 0;    // remote flag reads: every poll of a remote flag is one
  uint64_t remote_bytes = 0;  // get and put payload
  double waited_s = 0;        // time this rank spent waiting for the model
  uint64_t ops() const { return gets + puts + flag_updates; }
  uint64_t round_trips() const { return gets + flag_reads; }  // the issuer waits for an answer
};

class LinkModelTransport final : public Transport {
 public:
  LinkModelTransport(Transport& inner, LinkModel model);

  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  std::string name() const override { return in_.name() + "+" + model_.name; }
  SymBuffer alloc(size_t bytes) override { return in_.alloc(bytes); }
  FlagId alloc_flags(int64_t n) override { return in_.alloc_flags(n); }
  std::byte* local(SymBuffer b) override { return in_.local(b); }
  // Other ranks' memory goes over the link (get), never by plain loads.
  const std::byte* peer(int rank, SymBuffer b) override { return rank == this->rank() ? in_.local(b) : nullptr; }
  void get(void* dst, int rank, SymBuffer b, size_t offset, size_t bytes) override;
  void put(int rank, SymBuffer b, size_t offset, const void* src, size_t bytes) override;
  void flush() override;
  void flag_add(int rank, FlagId f, int64_t index, uint64_t v) override;
  uint64_t flag_load(int rank, FlagId f, int64_t index) override;
  void barrier() override;
  void allreduce(double* values, int64_t n, ReduceOp op) override;

  const LinkStats& stats() const { return stats_; }
  const LinkModel& model() const { return model_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Books `bytes` on the link to `peer`; returns when the operation completes.
  Clock::time_point book(int peer, size_t bytes, bool round_trip);
  void wait_until(Clock::time_point t);

  Transport& in_;
  LinkModel model_;
  std::chrono::nanoseconds alpha_;
  double ns_per_byte_;
  std::vector<Clock::time_point> link_free_, last_put_done_;
  Clock::time_point pending_done_{};
  LinkStats stats_;
};

}  // namespace squeeze::mok
