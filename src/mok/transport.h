// mok/transport.h — what dispatch and combine need from the machine: symmetric buffers
// every rank can read and write, 64-bit flags with release/acquire meaning, barriers
// and small reductions, all with a timeout that names the rank that did not arrive.
//
// Implementations: InProcTransport (ranks are threads of one process, like GPUs of one
// NVLink domain) and MpiTransport (ranks are processes: shared-memory windows inside a
// node, one-sided RMA between nodes). Collective calls (alloc, alloc_flags, barrier,
// allreduce) must be made by every rank in the same order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace squeeze::mok {

struct SymBuffer {
  int id = -1;
  size_t bytes = 0;
};
struct FlagId {
  int64_t index = -1;
};

enum class ReduceOp { Sum, Max };

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Short name for reports: "inproc", "mpi-shm", "mpi-rma".
  virtual std::string name() const = 0;

  // Collective: `bytes` of zeroed memory on every rank.
  virtual SymBuffer alloc(size_t bytes) = 0;
  // Collective: n flags (all zero) on every rank.
  virtual FlagId alloc_flags(int64_t n) = 0;

  // This rank's part of a symmetric buffer (plain loads and stores).
  virtual std::byte* local(SymBuffer b) = 0;
  // `rank`'s part, for plain loads, when this process can address it (in-process ranks,
  // MPI shared-memory windows); null otherwise (one-sided RMA, a modelled link). Reads
  // follow the same rules as get(): after the flag that publishes the data.
  virtual const std::byte* peer(int rank, SymBuffer b) { return rank == this->rank() ? local(b) : nullptr; }
  // dst <- rank's buffer [offset, offset+bytes); complete after flush().
  virtual void get(void* dst, int rank, SymBuffer b, size_t offset, size_t bytes) = 0;
  // rank's buffer [offset, ...) <- src; complete (visible at the target) after flush().
  virtual void put(int rank, SymBuffer b, size_t offset, const void* src, size_t bytes) = 0;
  // Completes every get and put this rank issued.
  virtual void flush() = 0;

  // flag += v on `rank`, with release meaning: this rank's earlier local stores and
  // puts (flushed or not) are visible before the new value is.
  virtual void flag_add(int rank, FlagId f, int64_t index, uint64_t v) = 0;
  // Reads flag on `rank` with acquire meaning (later gets and loads see what the
  // writer published before raising it).
  virtual uint64_t flag_load(int rank, FlagId f, int64_t index) = 0;

  // Waits until flag (on `rank`) >= at_least. Past the timeout throws squeeze::Error:
  // "rank <blame> did not arrive within <t> ms (<what>)".
  void wait_flag(int rank, FlagId f, int64_t index, uint64_t at_least, int blame, const char* what);
  // As wait_flag for a flag raised once per round, where the caller knows no writer can
  // be a round ahead (credits order the rounds): a value past `round` means the ranks
  // called in different sequences (a skipped or extra round), and throws instead of
  // letting the caller read a later round's data as this one's.
  void wait_round(int rank, FlagId f, int64_t index, uint64_t round, int blame, const char* what);

  // Every rank arrives; one absent past the timeout is named in the error.
  virtual void barrier() = 0;
  // In place over all ranks.
  virtual void allreduce(double* values, int64_t n, ReduceOp op) = 0;

  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 protected:
  // Flag-based barrier: each rank bumps its slot on every rank, then waits for all.
  void flag_barrier(FlagId slots, uint64_t& generation);

 private:
  std::chrono::milliseconds timeout_{10000};
};

// Spin briefly, then yield: ranks may outnumber cores (tests oversubscribe).
void relax(uint64_t& spins);

}  // namespace squeeze::mok
