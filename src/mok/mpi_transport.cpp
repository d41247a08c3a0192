// mok/mpi_transport.cpp — shared-memory windows and one-sided RMA behind Transport.
#include "mok/mpi_transport.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace squeeze::mok {
namespace {

constexpr int64_t kMaxFlags = 1 << 14;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  fail("MPI: ", what, ": ", std::string(msg, size_t(len)));
}

// Tag of the arrival tokens below; MPI matches messages in order per (source, tag,
// communicator), so successive arrivals never mix.
constexpr int kArrivalTag = 0x5a7e;

// A barrier with a deadline that can name who is missing: every rank sends a token to
// every other and polls for theirs. Blocking collectives (MPI_Barrier, the window
// constructors) would hang forever on a rank that never comes; this precedes each of
// them so they only start once every rank is known to be there.
void arrive_all(MPI_Comm comm, std::chrono::milliseconds timeout, const char* what) {
  int me = 0, n = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  static const char token = 0;  // sends may outlive this call after a timeout
  std::vector<char> got(static_cast<size_t>(n));
  std::vector<MPI_Request> recv(static_cast<size_t>(n), MPI_REQUEST_NULL), send(static_cast<size_t>(n), MPI_REQUEST_NULL);
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    check(MPI_Irecv(&got[size_t(r)], 1, MPI_CHAR, r, kArrivalTag, comm, &recv[size_t(r)]), "MPI_Irecv");
    check(MPI_Isend(&token, 1, MPI_CHAR, r, kArrivalTag, comm, &send[size_t(r)]), "MPI_Isend");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint64_t spins = 0;
  for (int r = 0; r < n; ++r) {
    for (int done = 0;;) {
      check(MPI_Test(&recv[size_t(r)], &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
      relax(spins);
      if (std::chrono::steady_clock::now() <= deadline) continue;
      for (auto& q : recv)
        if (q != MPI_REQUEST_NULL) MPI_Cancel(&q), MPI_Request_free(&q);
      for (auto& q : send)
        if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
      fail("rank ", r, " did not arrive within ", timeout.count(), " ms (rank ", me, " waiting for ", what, ")");
    }
  }
  // Every token was received, so every send can complete.
  check(MPI_Waitall(n, send.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

class MpiTransport final : public Transport {
 public:
  MPI_Comm comm() const { return comm_; }
  MpiTransport(MpiMode mode, MPI_Comm comm, std::chrono::milliseconds timeout) : mode_(mode) {
    set_timeout(timeout);
    arrive_all(comm, timeout, "mpi transport construction");
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (mode_ == MpiMode::Shm) {
      MPI_Comm node;
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
      int node_size = 0;
      MPI_Comm_size(node, &node_size);
      MPI_Comm_free(&node);
      SQZ_CHECK(node_size == size_, "mpi transport: shm mode needs every rank on one node (", node_size, " of ",
                size_, " share memory); use rma");
    }
    flags_ = make_window(size_t(kMaxFlags) * 8);
    barrier_slots_ = alloc_flags(size_);
  }
  ~MpiTransport() override {
    for (auto& w : windows_) {
      if (mode_ == MpiMode::Rma) MPI_Win_unlock_all(w.win);
      MPI_Win_free(&w.win);
    }
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return mode_ == MpiMode::Shm ? "mpi-shm" : "mpi-rma"; }

  SymBuffer alloc(size_t bytes) override {
    const int id = make_window(bytes);
    return {id, bytes};
  }
  FlagId alloc_flags(int64_t n) override {
    SQZ_CHECK(n >= 0 && n_flags_ + n <= kMaxFlags, "mpi transport: out of flags");
    FlagId f{n_flags_};
    n_flags_ += n;
    return f;
  }
  std::byte* local(SymBuffer b) override { return win(b).peers[size_t(rank_)]; }
  const std::byte* peer(int rank, SymBuffer b) override {
    if (rank == rank_) return local(b);
    if (mode_ != MpiMode::Shm) return nullptr;
    Window& w = win(b);
    check_range(w, rank, 0, 0);
    return peer_base(w, rank);
  }

  void get(void* dst, int rank, SymBuffer b, size_t off, size_t n) override {
    Window& w = win(b);
    check_range(w, rank, off, n);
    if (mode_ == MpiMode::Shm || rank == rank_) {
      std::memcpy(dst, peer_base(w, rank) + off, n);
      return;
    }
    check(MPI_Get(dst, int(n), MPI_BYTE, rank, MPI_Aint(off), int(n), MPI_BYTE, w.win), "MPI_Get");
    w.dirty = true;
  }
  void put(int rank, SymBuffer b, size_t off, const void* src, size_t n) override {
    Window& w = win(b);
    check_range(w, rank, off, n);
    if (mode_ == MpiMode::Shm || rank == rank_) {
      std::memcpy(peer_base(w, rank) + off, src, n);
      return;
    }
    check(MPI_Put(src, int(n), MPI_BYTE, rank, MPI_Aint(off), int(n), MPI_BYTE, w.win), "MPI_Put");
    w.dirty = true;
  }
  void flush() override {
    if (mode_ == MpiMode::Shm) return;
    for (auto& w : windows_)
      if (w.dirty) check(MPI_Win_flush_all(w.win), "MPI_Win_flush_all"), w.dirty = false;
  }

  void flag_add(int rank, FlagId f, int64_t i, uint64_t v) override {
    const int64_t idx = flag_index(rank, f, i);
    if (mode_ == MpiMode::Shm) {
      std::atomic_ref<uint64_t>(flag_word(rank, idx)).fetch_add(v, std::memory_order_release);
      return;
    }
    flush();                                       // puts complete at their targets first
    for (auto& w : windows_) MPI_Win_sync(w.win);  // and local stores are published
    uint64_t old = 0;
    check(MPI_Fetch_and_op(&v, &old, MPI_UINT64_T, rank, MPI_Aint(idx * 8), MPI_SUM, windows_[size_t(flags_)].win),
          "MPI_Fetch_and_op");
    check(MPI_Win_flush(rank, windows_[size_t(flags_)].win), "MPI_Win_flush");
  }
  uint64_t flag_load(int rank, FlagId f, int64_t i) override {
    const int64_t idx = flag_index(rank, f, i);
    if (mode_ == MpiMode::Shm) return std::atomic_ref<uint64_t>(flag_word(rank, idx)).load(std::memory_order_acquire);
    uint64_t value = 0, dummy = 0;
    check(MPI_Fetch_and_op(&dummy, &value, MPI_UINT64_T, rank, MPI_Aint(idx * 8), MPI_NO_OP,
                           windows_[size_t(flags_)].win),
          "MPI_Fetch_and_op");
    check(MPI_Win_flush(rank, windows_[size_t(flags_)].win), "MPI_Win_flush");
    for (auto& w : windows_) MPI_Win_sync(w.win);  // later local loads see what was published
    return value;
  }
  void barrier() override { flag_barrier(barrier_slots_, barrier_generation_); }
  // Arrival first (names a missing rank), then a non-blocking all-reduce polled against
  // the same timeout, so a rank that arrives and then dies cannot hang the rest either.
  void allreduce(double* v, int64_t n, ReduceOp op) override {
    SQZ_CHECK(n >= 0 && n <= INT_MAX, "mpi transport: all-reduce of ", n, " values");
    arrive_all(comm_, timeout(), "all-reduce");
    MPI_Request req;
    check(MPI_Iallreduce(MPI_IN_PLACE, v, int(n), MPI_DOUBLE, op == ReduceOp::Sum ? MPI_SUM : MPI_MAX, comm_, &req),
          "MPI_Iallreduce");
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    uint64_t spins = 0;
    for (int done = 0;;) {
      check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      relax(spins);
      if (std::chrono::steady_clock::now() > deadline)
        fail("mpi transport: all-reduce did not complete within ", timeout().count(), " ms on rank ", rank_,
             " (a rank arrived and then stopped)");
    }
  }

 private:
  struct Window {
    MPI_Win win;
    size_t bytes;
    std::vector<std::byte*> peers;  // load/store pointers (shm: all ranks; rma: own only)
    bool dirty = false;
  };
  int make_window(size_t bytes) {
    // MPI_Win_allocate* are blocking collectives: start them only once all are here.
    arrive_all(comm_, timeout(), "window creation");
    Window w{MPI_WIN_NULL, bytes, std::vector<std::byte*>(size_t(size_), nullptr)};
    void* base = nullptr;
    const MPI_Aint sz = MPI_Aint(bytes == 0 ? 8 : bytes);
    if (mode_ == MpiMode::Shm) {
      check(MPI_Win_allocate_shared(sz, 1, MPI_INFO_NULL, comm_, &base, &w.win), "MPI_Win_allocate_shared");
      for (int r = 0; r < size_; ++r) {
        MPI_Aint rsz;
        int disp;
        void* p;
        check(MPI_Win_shared_query(w.win, r, &rsz, &disp, &p), "MPI_Win_shared_query");
        w.peers[size_t(r)] = static_cast<std::byte*>(p);
      }
    } else {
      check(MPI_Win_allocate(sz, 1, MPI_INFO_NULL, comm_, &base, &w.win), "MPI_Win_allocate");
      w.peers[size_t(rank_)] = static_cast<std::byte*>(base);
    }
    std::memset(base, 0, size_t(sz));
    if (mode_ == MpiMode::Rma) check(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win), "MPI_Win_lock_all");
    arrive_all(comm_, timeout(), "window zeroing");  // every rank's memory is zeroed before anyone touches it
    windows_.push_back(w);
    return int(windows_.size()) - 1;
  }
  Window& win(SymBuffer b) {
    SQZ_CHECK(b.id >= 0 && size_t(b.id) < windows_.size() && b.id != flags_, "mpi transport: bad buffer ", b.id);
    return windows_[size_t(b.id)];
  }
  void check_range(const Window& w, int rank, size_t off, size_t n) const {
    SQZ_CHECK(rank >= 0 && rank < size_ && off + n <= w.bytes && n <= size_t(INT32_MAX), "mpi transport: access [",
              off, ", ", off + n, ") of ", w.bytes, " on rank ", rank);
  }
  std::byte* peer_base(Window& w, int rank) { return w.peers[size_t(rank)]; }
  int64_t flag_index(int rank, FlagId f, int64_t i) const {
    SQZ_CHECK(rank >= 0 && rank < size_ && f.index >= 0 && f.index + i < n_flags_, "mpi transport: flag ",
              f.index + i, " on rank ", rank, " out of range");
    return f.index + i;
  }
  uint64_t& flag_word(int rank, int64_t idx) {
    return reinterpret_cast<uint64_t*>(windows_[size_t(flags_)].peers[size_t(rank)])[idx];
  }

  MpiMode mode_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<Window> windows_;
  int flags_ = -1;
  int64_t n_flags_ = 0;
  FlagId barrier_slots_;
  uint64_t barrier_generation_ = 0;
};

}  // namespace

const char* mpi_mode_name(MpiMode m) { return m == MpiMode::Shm ? "shm" : "rma"; }
MpiMode parse_mpi_mode(const std::string& s) {
  if (s == "shm") return MpiMode::Shm;
  if (s == "rma") return MpiMode::Rma;
  fail("unknown MPI mode '", s, "' (expected shm or rma)");
}

std::unique_ptr<Transport> make_mpi_transport(MpiMode mode, MPI_Comm comm, std::chrono::milliseconds timeout) {
  return std::make_unique<MpiTransport>(mode, comm, timeout);
}

MPI_Comm communicator_of(Transport& t) {
  auto* m = dynamic_cast<MpiTransport*>(&t);
  SQZ_CHECK(m, "the Alltoallv layer needs MPI ranks (transport ", t.name(), ")");
  return m->comm();
}

void ensure_mpi_initialised() {
  int done = 0;
  MPI_Initialized(&done);
  if (done) return;
  int provided = 0;
  // Serialized: the fused pipeline's communication workers call MPI from their own
  // threads, one at a time (Dispatcher::fetch_rows holds a lock around transport calls).
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  SQZ_CHECK(provided >= MPI_THREAD_SERIALIZED, "MPI provides thread level ", provided,
            "; MoK needs MPI_THREAD_SERIALIZED");
  std::atexit([] {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
  });
}

}  // namespace squeeze::mok
