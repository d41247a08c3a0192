// mok/pipeline_bench.h — the fused pipeline against the unfused layer on one shape,
// behind `squeeze moe pipeline`: forward and backward times by phase, the share of the
// communication hidden behind expert compute, dispatch and combine throughput against
// this machine's memcpy bandwidth measured in the same run, and the minibatch sweep.
// Every rank calls it collectively.
#pragma once

#include <utility>
#include <vector>

#include "mok/config.h"
#include "mok/pipeline.h"
#include "mok/transport.h"

namespace squeeze::mok {

struct PipelineBenchOptions {
  MoeShape shape;
  int iters = 3, warmup = 1;
  PipelineOptions pipeline;
  std::vector<int> sweep_waves;  // minibatch sizes (in waves) to time the fused forward at
  bool backward = true;
};

// Medians over iterations of the slowest rank's time per phase.
struct PhaseTimes {
  double total_s = 0, dispatch_s = 0, experts_s = 0, pipeline_s = 0, combine_s = 0;
};

struct PipelineBenchResult {
  PhaseTimes unfused_fwd, fused_fwd, unfused_bwd, fused_bwd;
  // The MPI_Alltoallv layer (dispatch and combine by the collectives), on MPI ranks only.
  bool has_alltoallv = false;
  PhaseTimes alltoallv_fwd, alltoallv_bwd;
  // Share of the unfused dispatch time the fused pipeline hides:
  // (dispatch + experts − pipeline) / dispatch, clamped to [0, 1].
  double hidden_fwd = 0, hidden_bwd = 0;
  // The pipeline's own account of the same: 1 − (time its compute workers waited for rows)
  // / (its transfer time), worst rank, median over iterations. Unlike the difference
  // above it does not vanish in the noise of a compute-bound layer.
  double overlap_fwd = 0, overlap_bwd = 0;
  double memcpy_gbs = 0;       // one thread per rank copying a dispatch-sized buffer, all ranks at once
  double dispatch_bytes = 0;   // payload one rank receives per dispatch (its own rows included)
  double combine_bytes = 0;    // payload one rank gathers per combine
  int64_t rows = 0;            // rows rank 0 received
  int waves = 0;               // the minibatch the fused runs used
  int64_t minibatches = 0;
  int threads_per_rank = 0;    // workers per rank (C + P)
  unsigned cores = 0;
  std::vector<std::pair<int, double>> sweep;  // waves → fused forward seconds
};

// `w` holds the whole layer (in-process ranks share one copy); its router decides the routing.
PipelineBenchResult bench_pipeline(Transport& t, const MoeWeights& w, const PipelineBenchOptions& opt);

}  // namespace squeeze::mok
