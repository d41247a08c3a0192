// model/forward.cpp — the one forward pass, for every architecture squeeze runs (glimmer,
// llama = glimmer with every layer global, gemma3 and muse-glimmer = glimmer with their
// options on), as straight-line named steps over the rows of one step (one or more
// sequences' chunks, model/forward.h):
//   embed (× embd_scale, RMS-normalised?) → per layer [pre-norm?, Q/K/V, QK-norm?, RoPE
//   (base per layer kind; none on NoPE global layers), KV append, attention (windowed on
//   local layers, attn_scale), × sigmoid(output gate)?, output projection, post-norm?,
//   residual, pre-norm?, gated FFN (SwiGLU or GeGLU), post-norm?, residual] → final norm →
//   output head → × logit scale → soft-cap?. The options are ModelConfig fields
//   (model/config.h). Shapes in comments: n = tokens in the chunk, E = n_embd, F = n_ff,
//   H·D = q_dim, Hk·D = kv_dim, V = n_vocab.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/ops.h"
#include "model/forward.h"
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

void rope_rows(float* x, int64_t n, int64_t pos0, int64_t n_heads, const ModelConfig& c, float base) {
  for (int64_t i = 0; i < n; ++i) {
    ops().rope(x + i * n_heads * c.head_dim,
               {.n_heads = n_heads, .head_dim = c.head_dim, .rot_dim = c.head_dim, .position = pos0 + i,
                .freq_base = base, .freq_scale = 1.0f,
                .style = c.rope_type == RopeType::neox ? kernels::cpu::RopeStyle::NeoX : kernels::cpu::RopeStyle::Normal});
  }
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
}

const char* step_op_name(StepOp op) {
  static constexpr const char* kNames[kStepOps] = {"embed",     "norms",    "q/k/v proj", "rope",
                                                   "attention", "out proj", "ffn gate/up", "ffn act",
                                                   "ffn down",  "residual", "output head"};
  return kNames[static_cast<size_t>(op)];
}

std::string forward_support_error(const ModelConfig& c) {
  std::string missing;
  const auto lacks = [&](bool has, const char* what) {
    if (has) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  lacks(c.has_layer_kind(Mixer::linear_attention), "linear-attention layers");
  lacks(c.has_layer_kind(Ffn::moe), "expert (MoE) layers");
  lacks(c.attn_bias || c.attn_output_bias, "attention biases");
  lacks(c.fused_qkv, "a fused Q/K/V tensor");
  lacks(c.attn_sinks, "attention sinks");
  if (missing.empty()) return {};
  return "the forward pass does not implement " + missing + " yet";
}

int64_t logit_rows(std::span<const SequenceChunk> chunks) {
  int64_t rows = 0;
  for (const SequenceChunk& s : chunks) rows += s.all_logits ? s.n : 1;
  return rows;
}

void forward_step(const Model& model, ThreadPool& pool, ForwardScratch& scratch, std::span<const SequenceChunk> chunks,
                  float* logits_out, const ForwardOptions& options) {
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  const int64_t E = c.n_embd, F = c.n_ff, QD = c.q_dim(), KD = c.kv_dim();
  const int64_t n = check_chunks(c, chunks, scratch.max_rows());
  if (n == 0) return;
  float *x = scratch.x.data(), *h = scratch.h.data(), *q = scratch.q.data(), *k = scratch.k.data(), *v = scratch.v.data();
  float *attn = scratch.attn.data(), *proj = scratch.proj.data(), *gate = scratch.gate.data(), *up = scratch.up.data();
  const bool invariant = options.batch_invariant;
  // Names are built only while dumping: no string work on the hot path.
  const bool dumping = options.dump && *options.dump;
  const auto dump = [&](const char* name, const float* data, int64_t rows, int64_t cols) {
    if (dumping) (*options.dump)(name, data, rows, cols);
  };
  const auto dump_layer = [&](int64_t il, const char* name, const float* data, int64_t rows, int64_t cols) {
    if (dumping) (*options.dump)("blk." + std::to_string(il) + "." + name, data, rows, cols);
  };
  // Lap timer for the profile: mark(op) books the time since the previous mark to op.
  using Clock = std::chrono::steady_clock;
  StepProfile* const prof = options.profile;
  Clock::time_point lap = prof ? Clock::now() : Clock::time_point{};
  const auto mark = [&](StepOp op) {
    if (!prof) return;
    const Clock::time_point t = Clock::now();
    prof->seconds[static_cast<size_t>(op)] += std::chrono::duration<double>(t - lap).count();
    lap = t;
  };
  // Per chunk: its first row in the step and its first position in its sequence.
  std::vector<int64_t> row0(chunks.size()), pos0(chunks.size());
  for (size_t s = 0, r = 0; s < chunks.size(); r += static_cast<size_t>(chunks[s].n), ++s) {
    row0[s] = static_cast<int64_t>(r);
    pos0[s] = chunks[s].cache->size();
  }

  const bool pre_norm = c.norm_placement != NormPlacement::post, post_norm = c.norm_placement != NormPlacement::pre;

  // embed: x[n, E]. Rows given as embeddings (image features) skip the scale and the norm,
  // as the reference scatters them over the already normalised token embeddings.
  for (size_t s = 0; s < chunks.size(); ++s)
    for (int64_t i = 0; i < chunks[s].n; ++i) dequantize_row(w.token_embd, chunks[s].tokens[i], x + (row0[s] + i) * E);
  dump("token_embd", x, n, E);
  if (c.embd_scale != 1.0f) {
    for (int64_t i = 0; i < n * E; ++i) x[i] *= c.embd_scale;
    dump("inp_scaled", x, n, E);
  }
  if (c.embd_norm) {  // weightless RMSNorm of the embeddings (Muse Glimmer)
    for (int64_t i = 0; i < n; ++i) ops().rmsnorm(x + i * E, nullptr, x + i * E, E, c.rms_eps);
    dump("embd_norm", x, n, E);
  }
  for (size_t s = 0; s < chunks.size(); ++s)
    if (const float* const* given = chunks[s].embeddings)
      for (int64_t i = 0; i < chunks[s].n; ++i)
        if (given[i]) std::copy_n(given[i], E, x + (row0[s] + i) * E);
  mark(StepOp::embed);
  const float post_eps = c.effective_post_norm_eps();

  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[static_cast<size_t>(il)];
    const bool local = c.is_local[static_cast<size_t>(il)];

    // attention block; without a pre-norm the sublayer reads the residual stream itself
    const float* in = x;
    if (pre_norm) {
      rmsnorm_rows(x, L.attn_norm, h, n, E, c.rms_eps);                // h[n, E]
      dump_layer(il, "attn_norm", h, n, E);
      in = h;
    }
    mark(StepOp::norm);
    linear_many(pool, {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}}, in, n, invariant);  // q[n, H·D], k, v[n, Hk·D]
    mark(StepOp::qkv);
    if (c.qk_norm) {                                                    // RMSNorm of each head's row of D
      rmsnorm_rows(q, L.q_norm, q, n * c.n_head, c.head_dim, c.rms_eps);
      rmsnorm_rows(k, L.k_norm, k, n * c.n_head_kv, c.head_dim, c.rms_eps);
    }
    mark(StepOp::norm);
    if (c.uses_rope(il)) {
      const float base = local ? c.rope_base_local : c.rope_base_global;
      for (size_t s = 0; s < chunks.size(); ++s) {
        rope_rows(q + row0[s] * QD, chunks[s].n, pos0[s], c.n_head, c, base);
        rope_rows(k + row0[s] * KD, chunks[s].n, pos0[s], c.n_head_kv, c, base);
      }
    }
    mark(StepOp::rope);
    dump_layer(il, "attn_q", q, n, QD);
    dump_layer(il, "attn_k", k, n, KD);
    dump_layer(il, "attn_v", v, n, KD);
    for (size_t s = 0; s < chunks.size(); ++s) {                        // per sequence: its cache, its positions
      KvCache& cache = *chunks[s].cache;
      cache.append(il, {.k = k + row0[s] * KD, .v = v + row0[s] * KD, .n = chunks[s].n});
      kernels::cpu::attention(pool,
                              {.n_heads = c.n_head, .n_kv_heads = c.n_head_kv, .head_dim = c.head_dim,
                               .window = local ? c.sliding_window : 0, .scale = c.attn_scale,
                               .batch_invariant = invariant},
                              cache.view(il),
                              {.q = q + row0[s] * QD, .out = attn + row0[s] * QD, .n_queries = chunks[s].n,
                               .pos0 = pos0[s]});                       // attn[n, H·D]
    }
    dump_layer(il, "attn_out", attn, n, QD);
    mark(StepOp::attention);
    if (c.attn_gate) {  // attn ⊙ sigmoid(W_gate · the attention block's input)
      float* g = scratch.attn_gate.data();
      linear(pool, L.attn_gate, in, n, g, invariant);                   // g[n, H·D]
      for (int64_t i = 0; i < n * QD; ++i) attn[i] *= 1.0f / (1.0f + std::exp(-g[i]));
      dump_layer(il, "attn_gated", attn, n, QD);
    }
    mark(StepOp::qkv);
    linear(pool, L.wo, attn, n, proj, invariant);                       // proj[n, E]
    mark(StepOp::out_proj);
    if (post_norm) {
      rmsnorm_rows(proj, L.post_attn_norm, proj, n, E, post_eps);
      dump_layer(il, "attn_post_norm", proj, n, E);
    }
    mark(StepOp::norm);
    ops().add(x, proj, x, n * E);                                       // residual
    dump_layer(il, "attn_residual", x, n, E);
    mark(StepOp::residual);

    // feed-forward block
    in = x;
    if (pre_norm) {
      rmsnorm_rows(x, L.ffn_norm, h, n, E, c.rms_eps);
      dump_layer(il, "ffn_norm", h, n, E);
      in = h;
    }
    mark(StepOp::norm);
    linear_many(pool, {{&L.w_gate, gate}, {&L.w_up, up}}, in, n, invariant);  // gate[n, F], up[n, F]
    mark(StepOp::ffn_up);
    if (c.ffn_activation == FfnActivation::gelu_tanh) {
      ops().geglu(gate, up, gate, n * F);                               // gate = gelu(gate)·up
    } else {
      ops().swiglu(gate, up, gate, n * F);                              // gate = silu(gate)·up
    }
    dump_layer(il, "ffn_act", gate, n, F);
    mark(StepOp::ffn_act);
    linear(pool, L.w_down, gate, n, proj, invariant);                   // proj[n, E]
    mark(StepOp::ffn_down);
    if (post_norm) {
      rmsnorm_rows(proj, L.post_ffn_norm, proj, n, E, post_eps);
      dump_layer(il, "ffn_post_norm", proj, n, E);
    }
    mark(StepOp::norm);
    ops().add(x, proj, x, n * E);
    dump_layer(il, "ffn_residual", x, n, E);
    if (options.taps) {
      const auto& taps = *options.tap_layers;
      const int64_t nt = static_cast<int64_t>(taps.size());
      for (int64_t t = 0; t < nt; ++t)
        if (taps[static_cast<size_t>(t)] == il)
          for (int64_t r = 0; r < n; ++r) std::copy_n(x + r * E, E, options.taps + (r * nt + t) * E);
    }
    mark(StepOp::residual);
  }

  // output head, on each chunk's last token only unless every position's logits are wanted
  int64_t rows = 0;
  for (size_t s = 0; s < chunks.size(); ++s) {
    const int64_t first = chunks[s].all_logits ? 0 : chunks[s].n - 1;
    const int64_t m = chunks[s].n - first;
    rmsnorm_rows(x + (row0[s] + first) * E, w.output_norm, h + rows * E, m, E, c.rms_eps);
    rows += m;
  }
  dump("result_norm", h, rows, E);
  linear(pool, w.output, h, rows, logits_out, invariant);               // logits[rows, V]
  if (c.logit_scale != 1.0f || c.final_logit_softcap > 0) {             // cap · tanh(scale · logits / cap), one pass
    const float scale = c.logit_scale, cap = c.final_logit_softcap;
    for (int64_t i = 0; i < rows * c.n_vocab; ++i) {
      const float l = logits_out[i] * scale;
      logits_out[i] = cap > 0 ? cap * std::tanh(l / cap) : l;
    }
  }
  dump("logits", logits_out, rows, c.n_vocab);
  mark(StepOp::head);
  if (prof) ++prof->steps;
}

}  // namespace squeeze::model
