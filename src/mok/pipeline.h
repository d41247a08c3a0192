// mok/pipeline.h — the fused exchange of one rank's expert-parallel layer: pull dispatch,
// grouped expert GEMMs and the pull combine, overlapped, forward and backward.
//
// C communication workers pull the rows this rank receives from their sources into a ring
// of minibatch slots; P compute workers run SwiGLU on tiles of a minibatch as soon as it
// has landed and write the outputs, in payload format, straight into the published-output
// buffer that the pull combine reads in place (no gather, no copy before the combine). Each
// finished minibatch raises this rank's count of published rows, and the calling thread
// meanwhile sums its own tokens' slots as soon as their owners' counts pass them, so the
// combine runs behind the down-projections instead of after the last one.
//
// Credits order the ring: slot s holds minibatches s, s + S, s + 2S, ...; a communication
// worker fills minibatch j only after the compute workers have consumed minibatch j − S
// (the slot's consumed counter), and a compute worker starts minibatch j only after the
// slot's filled counter says it landed. So producers never overwrite unread rows, and a
// ring of one slot still completes (serially).
//
// Work is cut in tiles of `tile_rows` rows of one expert (rows stay in the dispatch's
// expert order); a wave is one tile for every compute worker and a minibatch is `waves`
// waves, at least 2 (auto_waves). Small minibatches start compute sooner but pay a
// synchronisation per minibatch; large ones hide less of the transfer (bench/moe_pipeline.sh
// sweeps the U-curve).
//
// Workers are threads and may outnumber the cores: every wait spins briefly, then sleeps on
// the ring's condition variable (woken by every counter update) or polls the owners' counts
// with growing sleeps, and gives up after the transport's timeout. The unfused layer runs
// its expert products in the same tiles (ExpertGroup::tile_rows) and every combine sums a
// token's slots in the same order, so fused and unfused agree bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "mok/config.h"
#include "mok/dispatcher.h"
#include "mok/experts.h"

namespace squeeze::mok {

struct PipelineOptions {
  int comm_workers = 1;     // C
  int compute_workers = 1;  // P
  int64_t tile_rows = 32;
  int waves = 0;            // minibatch size in waves; 0: auto_waves
  int ring_slots = 4;       // S, minibatches the ring holds
};

// A tile: rows [row, row + n) of the dispatch, all of local expert `expert`.
struct PipelineTile {
  int expert = 0;
  int64_t row = 0, n = 0;
};

struct PipelinePlan {
  std::vector<PipelineTile> tiles;
  int waves = 0;
  int64_t tiles_per_minibatch = 0;
  std::vector<int64_t> minibatch_tile;  // [minibatches + 1]: first tile of each minibatch
  int64_t minibatches() const { return int64_t(minibatch_tile.size()) - 1; }
  int64_t max_minibatch_rows = 0;
};

// The default minibatch in waves: enough minibatches (about 8) that the transfer of the
// first, which nothing hides, is a small part of the whole, and never fewer than 2 waves.
int auto_waves(int64_t tiles, int compute_workers);

// Tiles of every local expert's rows (offsets: [EL + 1] row offsets), grouped into
// minibatches of waves × P tiles.
PipelinePlan plan_pipeline(const std::vector<int64_t>& offsets, const PipelineOptions& opt);

struct PipelineStats {
  int64_t rows = 0;
  PipelinePlan plan;
  int threads = 0;        // C + P workers; the caller's thread runs the streamed combine
  double wall_s = 0;      // dispatch start to this rank's tokens combined
  double combine_tail_s = 0;  // the part of wall_s after this rank's experts finished
  double fetch_s = 0;     // communication workers' busy time, summed
  double compute_s = 0;   // compute workers' busy time, summed
  double starved_s = 0;   // compute workers waiting for rows, summed
};

// Collective, the whole forward exchange of the layer: the pull dispatch of x by `routing`,
// this rank's experts over every received row (activations kept in caches[e] for the
// backward, as experts_forward keeps them), each finished minibatch's outputs published,
// and this rank's tokens combined into `out` (Dispatcher::combine_streamed) while the
// experts run. Throws squeeze::Error on a bad option or when a peer does not arrive
// (named, after the transport's timeout).
DispatchHandle fused_moe_forward(Dispatcher& d, const MoeWeights& w, const float* x, const Routing& routing,
                                 const PipelineOptions& opt, std::vector<FfnCache>& caches,
                                 const Dispatcher::CombineOut& out, PipelineStats* stats = nullptr);

// Collective, the backward of the same pipeline: the cached pull dispatch of the output
// gradient dout [h.tokens, H], each row scaled by its gate, through this rank's experts'
// backward (input-gradient rows published minibatch by minibatch, weight gradients
// accumulated into grads per expert once the minibatch holding its last tile is
// published), and the unweighted
// combine of input gradients into dx [h.tokens, H], streamed likewise.
void fused_moe_backward(Dispatcher& d, const MoeWeights& w, const DispatchHandle& h, const float* dout,
                        const std::vector<FfnCache>& caches, const PipelineOptions& opt, MoeWeights& grads, float* dx,
                        PipelineStats* stats = nullptr);

}  // namespace squeeze::mok
