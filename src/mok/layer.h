// mok/layer.h — one rank's part of the expert-parallel MoE layer, forward and backward:
// route -> dispatch -> grouped experts -> combine (+ shared expert), and the mirror
// image for gradients (combine's backward is a cached dispatch of output gradients,
// dispatch's backward is a combine of input gradients).
#pragma once

#include <vector>

#include "mok/config.h"
#include "mok/dispatcher.h"
#include "mok/experts.h"
#include "mok/pipeline.h"
#include "mok/router.h"

namespace squeeze::mok {

struct LayerOptions {
  LayerOptions() = default;
  LayerOptions(DispatchStyle d, CombineStyle c) : dispatch(d), combine(c) {}
  static LayerOptions fused_pull(const PipelineOptions& p = {}) {
    LayerOptions o;
    o.fused = true;
    o.pipeline = p;
    return o;
  }
  DispatchStyle dispatch = DispatchStyle::Pull;
  CombineStyle combine = CombineStyle::Pull;
  // Forward and backward through the fused pipeline (mok/pipeline.h): pull styles only.
  bool fused = false;
  PipelineOptions pipeline;
};

// Where one forward or backward spent its time on this rank (waits for peers included):
// unfused, dispatch then experts then combine; fused, the pipeline (dispatch, experts and
// the combine overlapped, until this rank's experts finish) then the combine's tail.
struct PhaseTiming {
  double dispatch_s = 0, experts_s = 0, pipeline_s = 0, combine_s = 0;
};

class MoeLayer {
 public:
  // Collective. `weights` holds the whole layer; this rank uses its experts, the router
  // and the shared expert. It must outlive the layer.
  MoeLayer(const MoeConfig& cfg, Transport& transport, const MoeWeights& weights, LayerOptions opt = {});

  // x [tokens, H] (tokens <= T) -> out [tokens, H].
  void forward(const float* x, int64_t tokens, float* out);
  // dout [tokens, H] -> dx [tokens, H]. grads (shaped like the weights) receive: this
  // rank's experts' gradients, and the router's and shared expert's summed over ranks.
  void backward(const float* dout, float* dx, MoeWeights& grads);

  const DispatchHandle& handle() const { return handle_; }
  const Routing& routing() const { return routing_; }
  Dispatcher& dispatcher() { return dispatcher_; }
  // The last fused forward's or backward's timings and plan.
  const PipelineStats& pipeline_stats() const { return pipeline_stats_; }
  const LayerOptions& options() const { return opt_; }
  const PhaseTiming& forward_timing() const { return forward_timing_; }
  const PhaseTiming& backward_timing() const { return backward_timing_; }

 private:
  const MoeConfig cfg_;
  Transport& t_;
  const MoeWeights& w_;
  LayerOptions opt_;
  Dispatcher dispatcher_;
  // Forward state kept for the backward.
  std::vector<float> x_, slot_rows_;
  Routing routing_;
  RouterCache router_cache_;
  DispatchHandle handle_;
  ExpertGroup group_;
  std::vector<FfnCache> expert_caches_;
  FfnCache shared_cache_;
  PipelineStats pipeline_stats_;
  PhaseTiming forward_timing_, backward_timing_;
  bool have_forward_ = false;
};

}  // namespace squeeze::mok
