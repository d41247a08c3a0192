// mok/mpi_alltoallv.h — the baseline users would otherwise write: per-expert counts
// by MPI_Alltoall, rows by MPI_Alltoallv, then a local permute into expert order
// (and the mirror image for combine). Built only with MPI.
#pragma once

#include "mok/bench.h"

namespace squeeze::mok {

// A BenchRow for the MPI_Alltoallv dispatch/combine on MPI_COMM_WORLD (no signalling
// phase of its own: signal_us is the tiny-payload dispatch time, like the others).
BenchRow bench_alltoallv(const BenchOptions& opt);

}  // namespace squeeze::mok
