// mok/mpi_transport.h — ranks as MPI processes (built only when MPI is found).
//
// Shm: one MPI_Win_allocate_shared window per buffer over all ranks (one node); gets,
//      puts and flags are loads, stores and atomics on the peer's mapped memory.
// Rma: MPI_Win_allocate windows in one passive-target epoch (MPI_Win_lock_all);
//      MPI_Get for pull, MPI_Put for push, MPI_Accumulate / MPI_Fetch_and_op for flags.
//      On one machine this forces the across-node path, every rank its own "node".
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <vector>

#include "mok/transport.h"

namespace squeeze::mok {

enum class MpiMode { Shm, Rma };
const char* mpi_mode_name(MpiMode m);
MpiMode parse_mpi_mode(const std::string& s);

// MPI must be initialised (ensure_mpi_initialised: MPI_THREAD_SERIALIZED); the transport is
// used by one thread at a time. Construction and destruction
// are collective over `comm`. Every collective it makes (construction, alloc, barrier,
// allreduce) has the transport's timeout (`timeout` until set_timeout) and names a rank
// that did not arrive; only destruction (MPI_Win_free) is a bare collective.
std::unique_ptr<Transport> make_mpi_transport(MpiMode mode, MPI_Comm comm = MPI_COMM_WORLD,
                                              std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The communicator of an MPI transport (for collectives such as the Alltoallv layer);
// an error naming the transport for any other.
MPI_Comm communicator_of(Transport& t);
// Initialises MPI once for the process (no-op if already done); finalises at exit.
void ensure_mpi_initialised();

}  // namespace squeeze::mok
