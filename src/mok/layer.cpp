// mok/layer.cpp — the MoE layer's forward and backward on one rank.
#include "mok/layer.h"

#include <chrono>

#include "core/error.h"

namespace squeeze::mok {
namespace {

// Seconds since the last lap (or construction).
class PhaseClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

MoeLayer::MoeLayer(const MoeConfig& cfg, Transport& transport, const MoeWeights& weights, LayerOptions opt)
    : cfg_(cfg), t_(transport), w_(weights), opt_(opt), dispatcher_(cfg, transport) {
  SQZ_CHECK(weights.experts.size() == size_t(cfg.E()) && weights.router.size() == size_t(cfg.E() * cfg.H()),
            "moe layer: weights do not match the config (", cfg.describe(), ")");
  group_ = {&cfg_, &w_, t_.rank(), {}, opt.pipeline.tile_rows};
  SQZ_CHECK(!opt.fused || (opt.dispatch == DispatchStyle::Pull && opt.combine == CombineStyle::Pull),
            "moe layer: the fused pipeline pulls (dispatch ", dispatch_style_name(opt.dispatch), ", combine ",
            combine_style_name(opt.combine), " given)");
  if (opt.fused) plan_pipeline({0, 0}, opt.pipeline);  // validates the options before any collective call
}

void MoeLayer::forward(const float* x, int64_t tokens, float* out) {
  const int64_t H = cfg_.H();
  SQZ_CHECK(tokens >= 0 && tokens <= cfg_.T(), "moe layer: ", tokens, " tokens exceed T=", cfg_.T());
  x_.assign(x, x + tokens * H);
  routing_ = route(cfg_, w_, x, tokens, &router_cache_);
  const int EL = cfg_.experts_per_rank();
  const auto set_offsets = [&] {
    group_.offsets.resize(size_t(EL + 1));
    for (int e = 0; e <= EL; ++e) group_.offsets[size_t(e)] = handle_.seg_start[size_t(e * cfg_.R())];
  };
  slot_rows_.assign(size_t(tokens * cfg_.K() * H), 0.0f);
  PhaseClock clock;
  forward_timing_ = {};
  if (opt_.fused) {
    handle_ = fused_moe_forward(dispatcher_, w_, x, routing_, opt_.pipeline, expert_caches_,
                                {slot_rows_.data(), out, true}, &pipeline_stats_);
    const double s = clock.lap();
    forward_timing_.pipeline_s = s - pipeline_stats_.combine_tail_s;
    forward_timing_.combine_s = pipeline_stats_.combine_tail_s;
    set_offsets();
  } else {
    handle_ = dispatcher_.dispatch(opt_.dispatch, x, routing_);
    forward_timing_.dispatch_s = clock.lap();
    set_offsets();
    std::vector<float> rows(size_t(handle_.n_rows() * H)), y(rows.size());
    handle_.rows_to_f32(cfg_, rows.data());  // the layer never reads the transport buffer again
    experts_forward(group_, rows.data(), y.data(), expert_caches_);
    forward_timing_.experts_s = clock.lap();
    dispatcher_.combine(opt_.combine, handle_, y.data(), {slot_rows_.data(), out, true});
    forward_timing_.combine_s = clock.lap();
  }
  if (cfg_.shape().shared_expert) {
    std::vector<float> ys(size_t(tokens * H));
    swiglu_forward(w_.shared, H, cfg_.I(), tokens, x, ys.data(), shared_cache_);
    for (size_t i = 0; i < ys.size(); ++i) out[i] += ys[i];
  }
  have_forward_ = true;
}

void MoeLayer::backward(const float* dout, float* dx, MoeWeights& grads) {
  SQZ_CHECK(have_forward_, "moe layer: backward called before forward");
  const int64_t H = cfg_.H(), T = routing_.tokens;
  const int K = cfg_.K();
  // Combine's backward: the output gradient goes to every expert the token visited.
  // Dispatch's backward: input gradients return home and are summed unweighted.
  PhaseClock clock;
  backward_timing_ = {};
  if (opt_.fused) {
    fused_moe_backward(dispatcher_, w_, handle_, dout, expert_caches_, opt_.pipeline, grads, dx, &pipeline_stats_);
    const double s = clock.lap();
    backward_timing_.pipeline_s = s - pipeline_stats_.combine_tail_s;
    backward_timing_.combine_s = pipeline_stats_.combine_tail_s;
  } else {
    std::vector<float> dy(size_t(handle_.n_rows() * H)), dxr(dy.size());
    dispatcher_.dispatch_cached(opt_.dispatch, handle_, dout, dy.data());
    backward_timing_.dispatch_s = clock.lap();
    for (int64_t i = 0; i < handle_.n_rows(); ++i)
      for (int64_t j = 0; j < H; ++j) dy[size_t(i * H + j)] *= handle_.row_gate[size_t(i)];
    experts_backward(group_, expert_caches_, dy.data(), dxr.data(), grads);
    backward_timing_.experts_s = clock.lap();
    dispatcher_.combine(opt_.combine, handle_, dxr.data(), {nullptr, dx, false});
    backward_timing_.combine_s = clock.lap();
  }

  // Gate gradients from the rows kept at home, then the router and the shared expert.
  std::vector<float> dgate(size_t(T * K));
  for (int64_t t = 0; t < T; ++t)
    for (int k = 0; k < K; ++k) {
      const float* y = &slot_rows_[size_t((t * K + k) * H)];
      float acc = 0;
      for (int64_t j = 0; j < H; ++j) acc += dout[t * H + j] * y[j];
      dgate[size_t(t * K + k)] = acc;
    }
  // Only the router's and the shared expert's gradients: no zeroed copy of every expert.
  MoeWeights local;
  local.router.assign(w_.router.size(), 0.0f);
  local.router_bias.assign(w_.router_bias.size(), 0.0f);
  if (cfg_.shape().shared_expert)
    for (auto [dst, src] : {std::pair{&local.shared.gate, &w_.shared.gate}, std::pair{&local.shared.up, &w_.shared.up},
                            std::pair{&local.shared.down, &w_.shared.down}})
      dst->assign(src->size(), 0.0f);
  route_backward(cfg_, w_, x_.data(), routing_, router_cache_, dgate.data(), dx, local);
  if (cfg_.shape().shared_expert) {
    std::vector<float> dxs(size_t(T * H));
    swiglu_backward(w_.shared, H, cfg_.I(), T, shared_cache_, dout, dxs.data(), local.shared);
    for (size_t i = 0; i < dxs.size(); ++i) dx[i] += dxs[i];
  }
  // Replicated weights: sum their gradients over ranks.
  std::vector<std::vector<float>*> reps{&local.router, &local.router_bias};
  std::vector<std::vector<float>*> dst{&grads.router, &grads.router_bias};
  if (cfg_.shape().shared_expert) {
    reps.insert(reps.end(), {&local.shared.gate, &local.shared.up, &local.shared.down});
    dst.insert(dst.end(), {&grads.shared.gate, &grads.shared.up, &grads.shared.down});
  }
  for (size_t i = 0; i < reps.size(); ++i) {
    std::vector<double> v(reps[i]->begin(), reps[i]->end());
    t_.allreduce(v.data(), int64_t(v.size()), ReduceOp::Sum);
    for (size_t j = 0; j < v.size(); ++j) (*dst[i])[j] += float(v[j]);
  }
}

}  // namespace squeeze::mok
