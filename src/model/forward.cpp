// model/forward.cpp — the one forward pass, for every architecture squeeze runs (glimmer,
// llama = glimmer with every layer global, gemma3 and muse-glimmer = glimmer with their
// options on, the qwen family and gpt-oss with theirs), as straight-line named steps over
// the rows of one step (one or more sequences' chunks, model/forward.h):
//   embed (× embd_scale, RMS-normalised?) → per layer [pre-norm?, Q/K/V (+ biases?),
//   QK-norm?, RoPE (base per layer kind, YaRN?; none on NoPE global layers), KV append,
//   attention (windowed on local layers, attn_scale, sinks?), × sigmoid(output gate)?,
//   output projection (+ bias?), post-norm?, residual, pre-norm?, gated FFN (SwiGLU, GeGLU
//   or gpt-oss's clamped SwiGLU) or routed experts (expert layers, biases?), post-norm?,
//   residual] → final norm → output head → × logit scale → soft-cap?.
//   The options are ModelConfig fields (model/config.h). Shapes in comments: n = tokens in
//   the chunk, E = n_embd, F = n_ff, H·D = q_dim, Hk·D = kv_dim, V = n_vocab, X = experts.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/ops.h"
#include "model/forward.h"
#include "mok/grouping.h"
#include "mok/router.h"
#include "quant/matmul.h"
#include "quant/traits.h"

namespace squeeze::model {

namespace {

using kernels::cpu::ops;

// Y[n, W.rows] = X[n, W.cols] · Wᵀ: GEMV for one token, the tiled GEMM for a batch. In
// batch-invariant mode the GEMM is the dot tile for every n, and the GEMV the same type's
// dot kernels (bit-identical to the tile: test_quant_matmul), not the f32 fast path.
void linear(ThreadPool& pool, const quant::QMatrix& W, const float* X, int64_t n, float* Y, bool batch_invariant) {
  if (n == 1) {
    const bool f32_dots = batch_invariant && W.type == gguf::GgmlType::F32;
    quant::gemv(pool, W, X, Y, f32_dots ? &quant::traits(W.type) : nullptr);
  } else {
    quant::gemm(pool, W, {.X = X, .M = n, .ldx = W.cols, .Y = Y, .ldy = W.rows, .batch_invariant = batch_invariant});
  }
}

// Several projections of the same rows X (Q/K/V, gate/up): for one token a single pass
// over the pool (quant::gemv_many), rows the same as linear()'s; for a batch one GEMM each.
void linear_many(ThreadPool& pool, std::initializer_list<std::pair<const quant::QMatrix*, float*>> outs, const float* X,
                 int64_t n, bool batch_invariant) {
  if (n == 1) {
    // dot_kernels = batch_invariant: the types' own dots (only F32 has another, faster path).
    quant::GemvOutput o[4];
    size_t i = 0;
    for (const auto& [W, Y] : outs) o[i++] = {*W, Y};
    quant::gemv_many(pool, std::span(o, i), X, batch_invariant);
    return;
  }
  for (const auto& [W, Y] : outs) linear(pool, *W, X, n, Y, batch_invariant);
}

void rmsnorm_rows(const float* x, const std::vector<float>& w, float* y, int64_t n, int64_t width, float eps) {
  for (int64_t i = 0; i < n; ++i) ops().rmsnorm(x + i * width, w.data(), y + i * width, width, eps);
}

void rope_rows(float* x, int64_t n, int64_t pos0, int64_t n_heads, const ModelConfig& c, const Weights& w, float base) {
  for (int64_t i = 0; i < n; ++i) {
    ops().rope(x + i * n_heads * c.head_dim,
               {.n_heads = n_heads, .head_dim = c.head_dim, .rot_dim = c.head_dim, .position = pos0 + i,
                .freq_base = base, .freq_scale = c.rope_freq_scale,
                .freq_factors = w.rope_freqs.empty() ? nullptr : w.rope_freqs.data(),
                .style = c.rope_type == RopeType::neox ? kernels::cpu::RopeStyle::NeoX : kernels::cpu::RopeStyle::Normal});
  }
}

// gpt-oss's clamped SwiGLU, in place into gate: g = min(gate, 7), u = clamp(up, −7, 7),
// (u + 1) · g · σ(1.702 g) (transformers' GptOssExperts; llama.cpp hard-codes the same
// alpha and limit). Plain scalar code: it runs on the few routed rows only.
void swiglu_oai(float* gate, const float* up, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit), u = std::clamp(up[i], -kLimit, kLimit);
    gate[i] = (u + 1.0f) * (g / (1.0f + std::exp(-kAlpha * g)));
  }
}

// Gated activation of n values in place into gate, by the config's kind.
void gated_activation(FfnActivation a, float* gate, const float* up, int64_t n) {
  switch (a) {
    case FfnActivation::silu: ops().swiglu(gate, up, gate, n); return;  // silu(gate)·up
    case FfnActivation::gelu_tanh: ops().geglu(gate, up, gate, n); return;  // gelu(gate)·up
    case FfnActivation::swiglu_oai: swiglu_oai(gate, up, n); return;
  }
}

// y[n, width] += expert e's bias, biases[e·width, (e+1)·width).
void add_expert_bias(float* y, const std::vector<float>& biases, int e, int64_t width, int64_t n) {
  const float* b = biases.data() + static_cast<int64_t>(e) * width;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < width; ++j) y[i * width + j] += b[j];
}

// y[n, width] += b[width] (a projection's bias).
void add_bias_rows(float* y, const std::vector<float>& b, int64_t n) {
  const int64_t width = static_cast<int64_t>(b.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < width; ++j) y[i * width + j] += b[static_cast<size_t>(j)];
}

// Every chunk is checked before any cache changes, so a bad step leaves every sequence as it was.
int64_t check_chunks(const ModelConfig& c, std::span<const SequenceChunk> chunks, int64_t max_rows) {
  int64_t rows = 0;
  for (const SequenceChunk& s : chunks) {
    SQZ_CHECK(s.cache != nullptr && s.tokens != nullptr, "forward step: a chunk without cache or tokens");
    SQZ_CHECK(s.n >= 1 && s.n <= s.cache->max_chunk(), "forward step: a chunk of ", s.n, " tokens (1..",
              s.cache->max_chunk(), " fit its cache)");
    SQZ_CHECK(s.cache->size() + s.n <= s.cache->config().context_limit, "the sequence would reach ",
              s.cache->size() + s.n, " tokens, past the context length ", s.cache->config().context_limit);
    for (int64_t i = 0; i < s.n; ++i)
      SQZ_CHECK(s.tokens[i] >= 0 && s.tokens[i] < c.n_vocab, "token id ", s.tokens[i], " outside the vocabulary [0, ",
                c.n_vocab, ")");
    rows += s.n;
  }
  SQZ_CHECK(rows <= max_rows, "forward step: ", rows, " tokens, the scratch holds ", max_rows);
  return rows;
}

}  // namespace

ForwardScratch::ForwardScratch(const ModelConfig& c, int64_t max_rows) : max_rows_(max_rows) {
  SQZ_CHECK(max_rows > 0, "forward scratch needs at least one row");
  const auto sz = [&](int64_t width) { return static_cast<size_t>(max_rows * width); };
  x.resize(sz(c.n_embd));
  h.resize(sz(c.n_embd));
  proj.resize(sz(c.n_embd));
  q.resize(sz(c.q_dim()));
  attn.resize(sz(c.q_dim()));
  if (c.attn_gate) attn_gate.resize(sz(c.q_dim()));
  k.resize(sz(c.kv_dim()));
  v.resize(sz(c.kv_dim()));
  gate.resize(sz(c.n_ff));
  up.resize(sz(c.n_ff));
  if (c.has_layer_kind(Ffn::moe)) {
    moe_logits.resize(sz(c.n_expert));
    moe_gates.resize(sz(c.n_expert_used));
    moe_experts.resize(sz(c.n_expert_used));
    moe_order.resize(static_cast<size_t>(c.n_expert));
    moe_x.resize(sz(c.n_embd));
    moe_gate.resize(sz(c.n_ff_exp));
    moe_up.resize(sz(c.n_ff_exp));
    moe_out.resize(sz(c.n_embd));
  }
}

const char* step_op_name(StepOp op) {
  static constexpr const char* kNames[kStepOps] = {"embed",       "norms",      "q/k/v proj", "rope",
                                                   "attention",   "out proj",   "ffn gate/up", "ffn act",
                                                   "ffn down",    "moe router", "residual",    "output head"};
  return kNames[static_cast<size_t>(op)];
}

std::string forward_support_error(const ModelConfig& c) {
  std::string missing;
  const auto lacks = [&](bool has, const char* what) {
    if (has) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  lacks(c.has_layer_kind(Mixer::linear_attention), "linear-attention layers");
  lacks(c.n_ff_shexp > 0, "a shared expert");
  lacks(c.fused_qkv, "a fused Q/K/V tensor");
  if (missing.empty()) return {};
  return "the forward pass does not implement " + missing + " yet";
}

int64_t logit_rows(std::span<const SequenceChunk> chunks) {
  int64_t rows = 0;
  for (const SequenceChunk& s : chunks) rows += s.all_logits ? s.n : 1;
  return rows;
}

// One step's rows and what every block of the pass shares: the scratch, the rows and
// positions of each chunk, the dump and profile hooks. forward_step is the sequence of its
// named blocks.
class StepRunner {
 public:
  StepRunner(const Model& model, ThreadPool& pool, ForwardScratch& scratch, std::span<const SequenceChunk> chunks,
             int64_t n, const ForwardOptions& options)
      : c_(model.config()),
        w_(model.weights()),
        pool_(pool),
        scratch_(scratch),
        chunks_(chunks),
        options_(options),
        n_(n),
        invariant_(options.batch_invariant),
        dumping_(options.dump && *options.dump),
        prof_(options.profile),
        pre_norm_(c_.norm_placement != NormPlacement::post),
        post_norm_(c_.norm_placement != NormPlacement::pre),
        post_eps_(c_.effective_post_norm_eps()),
        // YaRN scales cos and sin by its attention factor m for q and k alike: m² on the scores.
        attn_scale_(c_.yarn_factor > 0 ? c_.effective_attn_scale() * c_.yarn_mscale() * c_.yarn_mscale()
                                       : c_.attn_scale),
        row0_(chunks.size()),
        pos0_(chunks.size()) {
    if (prof_) lap_ = Clock::now();
    // Per chunk: its first row in the step and its first position in its sequence.
    for (size_t s = 0, r = 0; s < chunks.size(); r += static_cast<size_t>(chunks[s].n), ++s) {
      row0_[s] = static_cast<int64_t>(r);
      pos0_[s] = chunks[s].cache->size();
    }
  }

  // x[n, E]. Rows given as embeddings (image features) skip the scale and the norm, as the
  // reference scatters them over the already normalised token embeddings.
  void embed() {
    const int64_t E = c_.n_embd;
    float* x = scratch_.x.data();
    for (size_t s = 0; s < chunks_.size(); ++s)
      for (int64_t i = 0; i < chunks_[s].n; ++i) dequantize_row(w_.token_embd, chunks_[s].tokens[i], x + (row0_[s] + i) * E);
    dump("token_embd", x, n_, E);
    if (c_.embd_scale != 1.0f) {
      for (int64_t i = 0; i < n_ * E; ++i) x[i] *= c_.embd_scale;
      dump("inp_scaled", x, n_, E);
    }
    if (c_.embd_norm) {  // weightless RMSNorm of the embeddings (Muse Glimmer)
      for (int64_t i = 0; i < n_; ++i) ops().rmsnorm(x + i * E, nullptr, x + i * E, E, c_.rms_eps);
      dump("embd_norm", x, n_, E);
    }
    for (size_t s = 0; s < chunks_.size(); ++s)
      if (const float* const* given = chunks_[s].embeddings)
        for (int64_t i = 0; i < chunks_[s].n; ++i)
          if (given[i]) std::copy_n(given[i], E, x + (row0_[s] + i) * E);
    mark(StepOp::embed);
  }

  // x += post_norm?(W_o · (attention(RoPE(QK-norm?(Q, K)), V) ⊙ sigmoid(gate)?)).
  void attention_block(int64_t il) {
    const LayerWeights& L = w_.layers[static_cast<size_t>(il)];
    const bool local = c_.is_local[static_cast<size_t>(il)];
    const int64_t QD = c_.q_dim(), KD = c_.kv_dim();
    float *q = scratch_.q.data(), *k = scratch_.k.data(), *v = scratch_.v.data(), *attn = scratch_.attn.data();
    const float* in = sublayer_input(il, L.attn_norm, "attn_norm");
    linear_many(pool_, {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}}, in, n_, invariant_);  // q[n, H·D], k, v[n, Hk·D]
    if (c_.attn_bias) {
      add_bias_rows(q, L.bq, n_);
      add_bias_rows(k, L.bk, n_);
      add_bias_rows(v, L.bv, n_);
    }
    mark(StepOp::qkv);
    if (c_.qk_norm) {  // RMSNorm of each head's row of D
      rmsnorm_rows(q, L.q_norm, q, n_ * c_.n_head, c_.head_dim, c_.rms_eps);
      rmsnorm_rows(k, L.k_norm, k, n_ * c_.n_head_kv, c_.head_dim, c_.rms_eps);
    }
    mark(StepOp::norm);
    if (c_.uses_rope(il)) {
      const float base = local ? c_.rope_base_local : c_.rope_base_global;
      for (size_t s = 0; s < chunks_.size(); ++s) {
        rope_rows(q + row0_[s] * QD, chunks_[s].n, pos0_[s], c_.n_head, c_, w_, base);
        rope_rows(k + row0_[s] * KD, chunks_[s].n, pos0_[s], c_.n_head_kv, c_, w_, base);
      }
    }
    mark(StepOp::rope);
    dump_layer(il, "attn_q", q, n_, QD);
    dump_layer(il, "attn_k", k, n_, KD);
    dump_layer(il, "attn_v", v, n_, KD);
    for (size_t s = 0; s < chunks_.size(); ++s) {  // per sequence: its cache, its positions
      KvCache& cache = *chunks_[s].cache;
      cache.append(il, {.k = k + row0_[s] * KD, .v = v + row0_[s] * KD, .n = chunks_[s].n});
      kernels::cpu::attention(pool_,
                              {.n_heads = c_.n_head, .n_kv_heads = c_.n_head_kv, .head_dim = c_.head_dim,
                               .window = local ? c_.sliding_window : 0, .scale = attn_scale_,
                               .sinks = c_.attn_sinks ? L.attn_sinks.data() : nullptr,
                               .batch_invariant = invariant_},
                              cache.view(il),
                              {.q = q + row0_[s] * QD, .out = attn + row0_[s] * QD, .n_queries = chunks_[s].n,
                               .pos0 = pos0_[s]});  // attn[n, H·D]
    }
    dump_layer(il, "attn_out", attn, n_, QD);
    mark(StepOp::attention);
    if (c_.attn_gate) {  // attn ⊙ sigmoid(W_gate · the attention block's input)
      float* g = scratch_.attn_gate.data();
      linear(pool_, L.attn_gate, in, n_, g, invariant_);  // g[n, H·D]
      for (int64_t i = 0; i < n_ * QD; ++i) attn[i] *= 1.0f / (1.0f + std::exp(-g[i]));
      dump_layer(il, "attn_gated", attn, n_, QD);
    }
    mark(StepOp::qkv);
    float* proj = scratch_.proj.data();
    linear(pool_, L.wo, attn, n_, proj, invariant_);  // proj[n, E]
    if (c_.attn_output_bias) add_bias_rows(proj, L.bo, n_);
    mark(StepOp::out_proj);
    add_sublayer_output(il, L.post_attn_norm, "attn_post_norm", "attn_residual");
  }

  // x += post_norm?(W_down · act(W_gate · x) ⊙ (W_up · x)), act SwiGLU or GeGLU.
  void ffn_block(int64_t il) {
    const LayerWeights& L = w_.layers[static_cast<size_t>(il)];
    const int64_t F = c_.n_ff;
    float *gate = scratch_.gate.data(), *up = scratch_.up.data(), *proj = scratch_.proj.data();
    const float* in = sublayer_input(il, L.ffn_norm, "ffn_norm");
    linear_many(pool_, {{&L.w_gate, gate}, {&L.w_up, up}}, in, n_, invariant_);  // gate[n, F], up[n, F]
    mark(StepOp::ffn_up);
    gated_activation(c_.ffn_activation, gate, up, n_ * F);
    dump_layer(il, "ffn_act", gate, n_, F);
    mark(StepOp::ffn_act);
    linear(pool_, L.w_down, gate, n_, proj, invariant_);  // proj[n, E]
    mark(StepOp::ffn_down);
    add_sublayer_output(il, L.post_ffn_norm, "ffn_post_norm", "ffn_residual");
  }

  // x += post_norm?(Σ_k gate_k · expert_k(x)): the router picks each row's experts (MoK's
  // selection, mok/router.h), the rows are grouped by expert (mok/grouping.h), each expert
  // runs its gate/up GEMM, SwiGLU and down GEMM on its rows straight from the mapped file
  // (only the routed experts' bytes are read), and every row's outputs are summed experts
  // ascending — MoK's combine order — so a row's result is the same whatever shares its step.
  void moe_block(int64_t il) {
    const LayerWeights& L = w_.layers[static_cast<size_t>(il)];
    const int64_t E = c_.n_embd;
    const int X = static_cast<int>(c_.n_expert), K = static_cast<int>(c_.n_expert_used);
    const float* in = sublayer_input(il, L.ffn_norm, "ffn_norm");
    float* logits = scratch_.moe_logits.data();
    linear(pool_, L.router, in, n_, logits, invariant_);  // logits[n, X]
    // gpt-oss takes the top-k of the biased logits and a softmax over those k: the same
    // gates as a softmax over all X renormalised over the k (model-families.md §9.1).
    if (c_.expert_bias) add_bias_rows(logits, L.router_bias, n_);
    dump_layer(il, "ffn_moe_logits", logits, n_, X);
    const mok::ExpertSelection sel{
        .n_experts = X, .top_k = K, .scoring = mok::Scoring::Softmax, .normalize = c_.expert_weights_norm};
    int32_t* experts = scratch_.moe_experts.data();
    float* gates = scratch_.moe_gates.data();
    for (int64_t i = 0; i < n_; ++i)
      mok::select_experts(sel, logits + i * X, scratch_.moe_order.data(), experts + i * K, gates + i * K);
    const mok::ExpertGrouping groups = mok::group_by_expert({experts, static_cast<size_t>(n_ * K)}, X);
    mark(StepOp::moe_route);
    float* proj = scratch_.proj.data();
    std::fill_n(proj, n_ * E, 0.0f);
    moe_grouped(L, in, groups, gates, proj);
    dump_layer(il, "ffn_moe_out", proj, n_, E);
    add_sublayer_output(il, L.post_ffn_norm, "ffn_post_norm", "ffn_residual");
  }

  // Per expert, its rows gathered into one GEMM per projection (a GEMV for one row), each
  // output row added into its token's row with its gate, experts ascending.
  void moe_grouped(const LayerWeights& L, const float* in, const mok::ExpertGrouping& groups, const float* gates,
                   float* proj) {
    const int64_t E = c_.n_embd, I = c_.n_ff_exp;
    const int X = static_cast<int>(c_.n_expert), K = static_cast<int>(c_.n_expert_used);
    float *xe = scratch_.moe_x.data(), *ge = scratch_.moe_gate.data(), *ue = scratch_.moe_up.data();
    float* ye = scratch_.moe_out.data();
    for (int e = 0; e < X; ++e) {
      const int64_t m = groups.count[static_cast<size_t>(e)];
      if (m == 0) continue;
      const int32_t* slots = groups.slots.data() + groups.begin[static_cast<size_t>(e)];
      for (int64_t j = 0; j < m; ++j) std::copy_n(in + (slots[j] / K) * E, E, xe + j * E);  // xe[m, E]
      const ExpertFfn f = expert_ffn(L, e);
      linear_many(pool_, {{&f.gate, ge}, {&f.up, ue}}, xe, m, invariant_);  // ge[m, I], ue[m, I]
      if (c_.expert_bias) {
        add_expert_bias(ge, L.gate_exps_bias, e, I, m);
        add_expert_bias(ue, L.up_exps_bias, e, I, m);
      }
      mark(StepOp::ffn_up);
      gated_activation(c_.ffn_activation, ge, ue, m * I);
      mark(StepOp::ffn_act);
      linear(pool_, f.down, ge, m, ye, invariant_);  // ye[m, E]
      if (c_.expert_bias) add_expert_bias(ye, L.down_exps_bias, e, E, m);  // before the gate weight
      for (int64_t j = 0; j < m; ++j) ops().axpy(gates[slots[j]], ye + j * E, proj + (slots[j] / K) * E, E);
      mark(StepOp::ffn_down);
    }
  }

  // The residual stream after layer il, for a drafter that taps it (ForwardOptions::taps).
  void tap(int64_t il) {
    if (options_.taps) {
      const int64_t E = c_.n_embd;
      const auto& taps = *options_.tap_layers;
      const int64_t nt = static_cast<int64_t>(taps.size());
      for (int64_t t = 0; t < nt; ++t)
        if (taps[static_cast<size_t>(t)] == il)
          for (int64_t r = 0; r < n_; ++r) std::copy_n(scratch_.x.data() + r * E, E, options_.taps + (r * nt + t) * E);
    }
    mark(StepOp::residual);
  }

  // logits[rows, V] = scale/soft-cap(W_out · norm(x)), on each chunk's last token only unless
  // every position's logits are wanted.
  void output_head(float* logits_out) {
    const int64_t E = c_.n_embd;
    float *x = scratch_.x.data(), *h = scratch_.h.data();
    if (options_.hidden_out) {
      rmsnorm_rows(x, w_.output_norm, options_.hidden_out, n_, E, c_.rms_eps);
      if (!logits_out) {
        mark(StepOp::head);
        if (prof_) ++prof_->steps;
        return;
      }
    }
    int64_t rows = 0;
    for (size_t s = 0; s < chunks_.size(); ++s) {
      const int64_t first = chunks_[s].all_logits ? 0 : chunks_[s].n - 1;
      const int64_t m = chunks_[s].n - first;
      rmsnorm_rows(x + (row0_[s] + first) * E, w_.output_norm, h + rows * E, m, E, c_.rms_eps);
      rows += m;
    }
    dump("result_norm", h, rows, E);
    linear(pool_, w_.output, h, rows, logits_out, invariant_);  // logits[rows, V]
    if (c_.logit_scale != 1.0f || c_.final_logit_softcap > 0) {  // cap · tanh(scale · logits / cap), one pass
      const float scale = c_.logit_scale, cap = c_.final_logit_softcap;
      for (int64_t i = 0; i < rows * c_.n_vocab; ++i) {
        const float l = logits_out[i] * scale;
        logits_out[i] = cap > 0 ? cap * std::tanh(l / cap) : l;
      }
    }
    dump("logits", logits_out, rows, c_.n_vocab);
    mark(StepOp::head);
    if (prof_) ++prof_->steps;
  }

 private:
  using Clock = std::chrono::steady_clock;

  // Expert e's three matrices: views into the layer's stacks (gate and up the two halves
  // of a fused gate/up expert).
  struct ExpertFfn {
    quant::QMatrix gate, up, down;
  };
  ExpertFfn expert_ffn(const LayerWeights& L, int e) const {
    ExpertFfn f;
    f.down = L.down_exps.expert(e);
    if (c_.fused_gate_up_exps) {
      f.gate = L.gate_up_exps.rows_of(e, 0, c_.n_ff_exp);
      f.up = L.gate_up_exps.rows_of(e, c_.n_ff_exp, c_.n_ff_exp);
    } else {
      f.gate = L.gate_exps.expert(e);
      f.up = L.up_exps.expert(e);
    }
    return f;
  }

  // A sublayer reads h = RMSNorm(x) with a pre-norm; without one, the residual stream itself.
  const float* sublayer_input(int64_t il, const std::vector<float>& norm, const char* name) {
    const float* in = scratch_.x.data();
    if (pre_norm_) {
      rmsnorm_rows(scratch_.x.data(), norm, scratch_.h.data(), n_, c_.n_embd, c_.rms_eps);  // h[n, E]
      dump_layer(il, name, scratch_.h.data(), n_, c_.n_embd);
      in = scratch_.h.data();
    }
    mark(StepOp::norm);
    return in;
  }

  // x += post_norm?(proj).
  void add_sublayer_output(int64_t il, const std::vector<float>& norm, const char* norm_name,
                           const char* residual_name) {
    const int64_t E = c_.n_embd;
    float *x = scratch_.x.data(), *proj = scratch_.proj.data();
    if (post_norm_) {
      rmsnorm_rows(proj, norm, proj, n_, E, post_eps_);
      dump_layer(il, norm_name, proj, n_, E);
    }
    mark(StepOp::norm);
    ops().add(x, proj, x, n_ * E);  // residual
    dump_layer(il, residual_name, x, n_, E);
  }

  // Names are built only while dumping: no string work on the hot path.
  void dump(const char* name, const float* data, int64_t rows, int64_t cols) const {
    if (dumping_) (*options_.dump)(name, data, rows, cols);
  }
  void dump_layer(int64_t il, const char* name, const float* data, int64_t rows, int64_t cols) const {
    if (dumping_) (*options_.dump)("blk." + std::to_string(il) + "." + name, data, rows, cols);
  }
  // Lap timer for the profile: mark(op) books the time since the previous mark to op.
  void mark(StepOp op) {
    if (!prof_) return;
    const Clock::time_point t = Clock::now();
    prof_->seconds[static_cast<size_t>(op)] += std::chrono::duration<double>(t - lap_).count();
    lap_ = t;
  }

  const ModelConfig& c_;
  const Weights& w_;
  ThreadPool& pool_;
  ForwardScratch& scratch_;
  std::span<const SequenceChunk> chunks_;
  const ForwardOptions& options_;
  const int64_t n_;
  const bool invariant_, dumping_;
  StepProfile* const prof_;
  const bool pre_norm_, post_norm_;
  const float post_eps_, attn_scale_;
  std::vector<int64_t> row0_, pos0_;
  Clock::time_point lap_{};
};

void forward_step(const Model& model, ThreadPool& pool, ForwardScratch& scratch, std::span<const SequenceChunk> chunks,
                  float* logits_out, const ForwardOptions& options) {
  const int64_t n = check_chunks(model.config(), chunks, scratch.max_rows());
  if (n == 0) return;
  SQZ_CHECK(logits_out || options.hidden_out, "forward: nowhere to write the step's output");
  StepRunner step(model, pool, scratch, chunks, n, options);
  step.embed();
  for (int64_t il = 0; il < model.config().n_layer; ++il) {
    step.attention_block(il);
    if (model.config().layer_kind(il).ffn == Ffn::moe) {
      step.moe_block(il);
    } else {
      step.ffn_block(il);
    }
    step.tap(il);
  }
  step.output_head(logits_out);
}

}  // namespace squeeze::model
