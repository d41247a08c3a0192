// train/moe_lm.cpp — see moe_lm.h.
#include "train/moe_lm.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "train/glimmer_forward.h"
#include "train/ops.h"

namespace squeeze::train {
namespace {

bool is_dense_ffn(const std::string& name) {
  return name.find(".ffn_gate.weight") != std::string::npos || name.find(".ffn_up.weight") != std::string::npos ||
         name.find(".ffn_down.weight") != std::string::npos;
}

mok::MoeShape moe_shape(const model::ModelConfig& dense, const MoeLmOptions& o, int ranks) {
  mok::MoeShape s;
  s.tokens_per_rank = o.batch * o.seq_len;
  s.hidden = dense.n_embd;
  s.inter = o.expert_ff;
  s.n_experts = o.n_experts;
  s.top_k = o.top_k;
  s.n_ranks = ranks;
  s.payload = o.payload;
  return s;
}

// The MoE layer as one op of the tape: forward now, its (collective) backward when the
// tape reaches it; the input gradient adds into the residual stream's.
Var moe_ffn(Tape<float>& t, mok::MoeLayer& layer, mok::MoeWeights& grads, Var in) {
  const int64_t n = t.rows(in), H = t.cols(in);
  const Var out = t.output(n, H, true);
  layer.forward(t.value(in), n, t.value(out));
  t.on_backward([&t, &layer, &grads, in, out, n, H] {
    std::vector<float> dx(size_t(n * H));
    layer.backward(t.grad(out), dx.data(), grads);
    if (float* g = t.grad(in))
      for (size_t i = 0; i < dx.size(); ++i) g[i] += dx[i];
  });
  return out;
}

}  // namespace

MoeLm::MoeLm(const model::ModelConfig& dense, text::TokenizerData tokenizer, const MoeLmOptions& opt,
             mok::Transport& transport)
    : opt_(opt),
      t_(transport),
      model_(GlimmerModel::init(dense, std::move(tokenizer), {.seed = opt.seed})),
      cfg_(moe_shape(dense, opt, transport.size())) {
  SQZ_CHECK(opt.seq_len >= 2 && opt.seq_len <= dense.n_ctx, "moe-train: sequences of ", opt.seq_len,
            " tokens (the model's context is ", dense.n_ctx, ")");
  auto& ps = model_.params();
  ps.erase(std::remove_if(ps.begin(), ps.end(), [](const Parameter& p) { return is_dense_ffn(p.name); }), ps.end());
  first_moe_ = ps.size();
  const int me = t_.rank(), EL = cfg_.experts_per_rank();
  const int64_t H = cfg_.H(), I = cfg_.I();
  // The layers keep references into weights_: no reallocation after this.
  weights_.reserve(size_t(dense.n_layer));
  grads_.reserve(size_t(dense.n_layer));
  for (int64_t il = 0; il < dense.n_layer; ++il) {
    // Every rank draws the whole layer from the same seed, so the replicated router agrees
    // and one rank alone starts from the same experts as R ranks together.
    weights_.push_back(mok::random_weights(cfg_, opt.seed * 1000 + uint64_t(il)));
    grads_.push_back(mok::local_zeros(cfg_, me));
    const std::string b = "blk." + std::to_string(il) + ".";
    const mok::MoeWeights& w = weights_.back();
    ps.push_back({b + "ffn_gate_inp.weight", H, cfg_.E(), il, w.router, std::vector<float>(w.router.size())});
    for (int e = me * EL; e < (me + 1) * EL; ++e) {
      const auto& x = w.experts[size_t(e)];
      const std::string id = "." + std::to_string(e);
      ps.push_back({b + "ffn_gate_exps" + id, H, I, il, x.gate, std::vector<float>(x.gate.size())});
      ps.push_back({b + "ffn_up_exps" + id, H, I, il, x.up, std::vector<float>(x.up.size())});
      ps.push_back({b + "ffn_down_exps" + id, I, H, il, x.down, std::vector<float>(x.down.size())});
    }
    layers_.push_back(std::make_unique<mok::MoeLayer>(cfg_, t_, weights_.back(), opt.layer));
  }
  replicated_.resize(ps.size());
  for (size_t i = 0; i < ps.size(); ++i)
    replicated_[i] = i < first_moe_ || ps[i].name.find("ffn_gate_inp") != std::string::npos;
  adamw_ = std::make_unique<AdamW>(ps, opt.adamw);
}

void MoeLm::load_moe_weights() {
  auto& ps = model_.params();
  const int EL = cfg_.experts_per_rank(), me = t_.rank();
  size_t i = first_moe_;
  for (auto& w : weights_) {
    w.router = ps[i++].value;
    for (int e = me * EL; e < (me + 1) * EL; ++e) {
      w.experts[size_t(e)].gate = ps[i++].value;
      w.experts[size_t(e)].up = ps[i++].value;
      w.experts[size_t(e)].down = ps[i++].value;
    }
  }
}

void MoeLm::store_moe_grads() {
  auto& ps = model_.params();
  const int EL = cfg_.experts_per_rank(), me = t_.rank();
  size_t i = first_moe_;
  for (auto& g : grads_) {
    ps[i++].grad = g.router;
    for (int e = me * EL; e < (me + 1) * EL; ++e) {
      ps[i++].grad = g.experts[size_t(e)].gate;
      ps[i++].grad = g.experts[size_t(e)].up;
      ps[i++].grad = g.experts[size_t(e)].down;
    }
    for (auto* v : g.tensors()) std::fill(v->begin(), v->end(), 0.0f);
  }
}

double MoeLm::step(std::span<const int32_t> inputs, std::span<const int32_t> targets, float lr) {
  SQZ_CHECK(int64_t(inputs.size()) == opt_.batch * opt_.seq_len && targets.size() == inputs.size(),
            "moe-train: a step takes ", opt_.batch, " x ", opt_.seq_len, " tokens, got ", inputs.size());
  load_moe_weights();
  model_.zero_grad();
  double loss = 0;
  {
    Tape<float> tape;
    const FfnOverride<float> ffn = [&](Tape<float>& t, Var in, int64_t il) {
      return moe_ffn(t, *layers_[size_t(il)], grads_[size_t(il)], in);
    };
    const ParamLeaf leaf = [&](std::string_view name) {
      Parameter& p = model_.param(name);
      return tape.leaf(p.value, p.grad, p.rows, p.cols);
    };
    const Var logits = record_forward(tape, model_.config(), leaf, inputs, opt_.seq_len, &ffn);
    const Var l = cross_entropy(tape, logits, targets);
    loss = double(tape.value(l)[0]) / t_.size();
    tape.backward(scale(tape, l, 1.0 / t_.size()));
  }
  store_moe_grads();
  auto& ps = model_.params();
  // Replicated gradients (the dense stack; the router's arrive summed already): summed over ranks.
  std::vector<double> buf;
  for (size_t i = 0; i < first_moe_; ++i) buf.insert(buf.end(), ps[i].grad.begin(), ps[i].grad.end());
  buf.push_back(loss);
  t_.allreduce(buf.data(), int64_t(buf.size()), mok::ReduceOp::Sum);
  size_t at = 0;
  for (size_t i = 0; i < first_moe_; ++i)
    for (float& g : ps[i].grad) g = float(buf[at++]);
  loss = buf[at];
  // One global norm: replicated parameters counted once, every rank's experts summed.
  double sq[2] = {0, 0};
  for (size_t i = 0; i < ps.size(); ++i)
    for (float g : ps[i].grad) sq[replicated_[i] ? 0 : 1] += double(g) * g;
  t_.allreduce(&sq[1], 1, mok::ReduceOp::Sum);
  const double norm = std::sqrt(sq[0] + sq[1]);
  if (opt_.clip > 0 && norm > opt_.clip) {
    const float s = float(opt_.clip / (norm + 1e-12));
    for (auto& p : ps)
      for (float& g : p.grad) g *= s;
  }
  adamw_->step(ps, lr);
  return loss;
}

int64_t MoeLm::n_params_local() const { return model_.n_params(); }

int64_t MoeLm::n_params_total() const {
  int64_t n = 0;
  const auto& ps = model_.params();
  for (size_t i = 0; i < ps.size(); ++i) n += replicated_[i] ? ps[i].size() : ps[i].size() * t_.size();
  return n;
}

}  // namespace squeeze::train
