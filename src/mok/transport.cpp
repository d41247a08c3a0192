// mok/transport.cpp — the timed wait and the flag barrier shared by every transport.
#include "mok/transport.h"

#include <thread>

#include "core/error.h"

namespace squeeze::mok {

void relax(uint64_t& spins) {
  if (++spins > 64) std::this_thread::yield();
}

void Transport::wait_flag(int rank, FlagId f, int64_t index, uint64_t at_least, int blame, const char* what) {
  if (flag_load(rank, f, index) >= at_least) return;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  uint64_t spins = 0;
  while (flag_load(rank, f, index) < at_least) {
    relax(spins);
    if ((spins & 63) == 0 && std::chrono::steady_clock::now() > deadline)
      fail("rank ", blame, " did not arrive within ", timeout_.count(), " ms (rank ", this->rank(), " waiting for ",
           what, ")");
  }
}

void Transport::wait_round(int rank, FlagId f, int64_t index, uint64_t round, int blame, const char* what) {
  wait_flag(rank, f, index, round, blame, what);
  const uint64_t v = flag_load(rank, f, index);
  if (v != round)
    fail("rank ", blame, " is at round ", v, " but rank ", this->rank(), " expected round ", round, " (", what,
         "): the ranks' call sequences differ");
}

void Transport::flag_barrier(FlagId slots, uint64_t& generation) {
  ++generation;
  const int me = rank();
  for (int r = 0; r < size(); ++r) flag_add(r, slots, me, 1);
  for (int r = 0; r < size(); ++r) wait_flag(rank(), slots, r, generation, r, "barrier");
}

}  // namespace squeeze::mok
