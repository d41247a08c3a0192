// tools/moe_ranks.h — how the MoK commands (moe, moe-train) run their ranks: R threads of
// this process (in-process transport) or this process as one MPI rank, optionally through
// the link model.
#pragma once

#include <functional>
#include <string>

#include "args.h"
#include "mok/link_model.h"
#include "mok/transport.h"

namespace squeeze::tools {

// --link, --link-latency-us, --link-gbps → the link model (none: the real transport alone).
mok::LinkModel link_from(const cli::Args& a);

// Runs fn on every rank of the chosen transport (inproc: `ranks` threads; mpi-shm /
// mpi-rma: this process), through the link model when one is set.
void on_ranks(const std::string& transport, int ranks, const mok::LinkModel& link,
              const std::function<void(mok::Transport&)>& fn);

// The number of ranks: `requested` in-process, the MPI world's size under MPI.
int world_size(const std::string& transport, int requested);
// This process's rank under MPI, 0 in-process (where rank 0's thread reports).
int reporting_rank(const std::string& transport);

}  // namespace squeeze::tools
