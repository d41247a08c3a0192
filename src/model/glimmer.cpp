// model/glimmer.cpp — the one forward pass, for every architecture squeeze runs (glimmer,
// llama = glimmer with every layer global, gemma3 and muse-glimmer = glimmer with their
// options on), as straight-line named steps:
//   embed (× embd_scale, RMS-normalised?) → per layer [pre-norm?, Q/K/V, QK-norm?, RoPE
//   (base per layer kind; none on NoPE global layers), KV append, attention (windowed on
//   local layers, attn_scale), × sigmoid(output gate)?, output projection, post-norm?,
//   residual, pre-norm?, gated FFN (SwiGLU or GeGLU), post-norm?, residual] → final norm →
//   output head → × logit scale → soft-cap?. The options are ModelConfig fields
//   (model/config.h). Shapes in comments: n = tokens in the chunk, E = n_embd, F = n_ff,
//   H·D = q_dim, Hk·D = kv_dim, V = n_vocab.
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/ops.h"
#include "model/session.h"
#include "quant/matmul.h"

namespace squeeze::model {

namespace {

using kernels::cpu::ops;

// Y[n, W.rows] = X[n, W.cols] · Wᵀ: GEMV for one token, the tiled GEMM for a batch.
void linear(ThreadPool& pool, const quant::QMatrix& W, const float* X, int64_t n, float* Y) {
  if (n == 1) {
    quant::gemv(pool, W, X, Y);
  } else {
    quant::gemm(pool, W, {.X = X, .M = n, .ldx = W.cols, .Y = Y, .ldy = W.rows});
  }
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

}  // namespace

void Session::forward_chunk(const int32_t* tokens, int64_t n, bool all_logits, float* logits_out) {
  const ModelConfig& c = cfg_;
  const Weights& w = model_.weights();
  const int64_t E = c.n_embd, F = c.n_ff, QD = c.q_dim(), KD = c.kv_dim();
  const int64_t pos0 = cache_.size();
  float *x = x_.data(), *h = h_.data(), *q = q_.data(), *k = k_.data(), *v = v_.data();
  float *attn = attn_.data(), *proj = proj_.data(), *gate = gate_.data(), *up = up_.data();

  const bool pre_norm = c.norm_placement != NormPlacement::post, post_norm = c.norm_placement != NormPlacement::pre;

  // embed: x[n, E]
  for (int64_t i = 0; i < n; ++i) {
    SQZ_CHECK(tokens[i] >= 0 && tokens[i] < c.n_vocab, "token id ", tokens[i], " outside the vocabulary [0, ", c.n_vocab, ")");
    dequantize_row(w.token_embd, tokens[i], x + i * E);
  }
  dump("token_embd", x, n, E);
  if (c.embd_scale != 1.0f) {
    for (int64_t i = 0; i < n * E; ++i) x[i] *= c.embd_scale;
    dump("inp_scaled", x, n, E);
  }
  if (c.embd_norm) {  // weightless RMSNorm of the embeddings (Muse Glimmer)
    for (int64_t i = 0; i < n; ++i) ops().rmsnorm(x + i * E, nullptr, x + i * E, E, c.rms_eps);
    dump("embd_norm", x, n, E);
  }
  const float post_eps = c.effective_post_norm_eps();

  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[static_cast<size_t>(il)];
    const std::string p = "blk." + std::to_string(il) + ".";
    const bool local = c.is_local[static_cast<size_t>(il)];

    // attention block; without a pre-norm the sublayer reads the residual stream itself
    const float* in = x;
    if (pre_norm) {
      rmsnorm_rows(x, L.attn_norm, h, n, E, c.rms_eps);                // h[n, E]
      dump(p + "attn_norm", h, n, E);
      in = h;
    }
    linear(pool_, L.wq, in, n, q);                                      // q[n, H·D]
    linear(pool_, L.wk, in, n, k);                                      // k[n, Hk·D]
    linear(pool_, L.wv, in, n, v);                                      // v[n, Hk·D]
    if (c.qk_norm) {                                                    // RMSNorm of each head's row of D
      rmsnorm_rows(q, L.q_norm, q, n * c.n_head, c.head_dim, c.rms_eps);
      rmsnorm_rows(k, L.k_norm, k, n * c.n_head_kv, c.head_dim, c.rms_eps);
    }
    if (c.uses_rope(il)) {
      const float base = local ? c.rope_base_local : c.rope_base_global;
      rope_rows(q, n, pos0, c.n_head, c, base);
      rope_rows(k, n, pos0, c.n_head_kv, c, base);
    }
    dump(p + "attn_q", q, n, QD);
    dump(p + "attn_k", k, n, KD);
    dump(p + "attn_v", v, n, KD);
    cache_.append(il, {.k = k, .v = v, .n = n});
    kernels::cpu::attention(pool_,
                            {.n_heads = c.n_head, .n_kv_heads = c.n_head_kv, .head_dim = c.head_dim,
                             .window = local ? c.sliding_window : 0, .scale = c.attn_scale},
                            cache_.view(il), {.q = q, .out = attn, .n_queries = n, .pos0 = pos0});  // attn[n, H·D]
    dump(p + "attn_out", attn, n, QD);
    if (c.attn_gate) {  // attn ⊙ sigmoid(W_gate · the attention block's input)
      float* g = attn_gate_.data();
      linear(pool_, L.attn_gate, in, n, g);                             // g[n, H·D]
      for (int64_t i = 0; i < n * QD; ++i) attn[i] *= 1.0f / (1.0f + std::exp(-g[i]));
      dump(p + "attn_gated", attn, n, QD);
    }
    linear(pool_, L.wo, attn, n, proj);                                 // proj[n, E]
    if (post_norm) {
      rmsnorm_rows(proj, L.post_attn_norm, proj, n, E, post_eps);
      dump(p + "attn_post_norm", proj, n, E);
    }
    ops().add(x, proj, x, n * E);                                       // residual
    dump(p + "attn_residual", x, n, E);

    // feed-forward block
    in = x;
    if (pre_norm) {
      rmsnorm_rows(x, L.ffn_norm, h, n, E, c.rms_eps);
      dump(p + "ffn_norm", h, n, E);
      in = h;
    }
    linear(pool_, L.w_gate, in, n, gate);                               // gate[n, F]
    linear(pool_, L.w_up, in, n, up);                                   // up[n, F]
    if (c.ffn_activation == FfnActivation::gelu_tanh) {
      ops().geglu(gate, up, gate, n * F);                               // gate = gelu(gate)·up
    } else {
      ops().swiglu(gate, up, gate, n * F);                              // gate = silu(gate)·up
    }
    dump(p + "ffn_act", gate, n, F);
    linear(pool_, L.w_down, gate, n, proj);                             // proj[n, E]
    if (post_norm) {
      rmsnorm_rows(proj, L.post_ffn_norm, proj, n, E, post_eps);
      dump(p + "ffn_post_norm", proj, n, E);
    }
    ops().add(x, proj, x, n * E);
    dump(p + "ffn_residual", x, n, E);
  }

  // output head, on the last token only unless every position's logits are wanted
  const int64_t first = all_logits ? 0 : n - 1;
  const int64_t rows = n - first;
  rmsnorm_rows(x + first * E, w.output_norm, h, rows, E, c.rms_eps);
  dump("result_norm", h, rows, E);
  linear(pool_, w.output, h, rows, logits_out);                         // logits[rows, V]
  if (c.logit_scale != 1.0f || c.final_logit_softcap > 0) {             // cap · tanh(scale · logits / cap), one pass
    const float scale = c.logit_scale, cap = c.final_logit_softcap;
    for (int64_t i = 0; i < rows * c.n_vocab; ++i) {
      const float l = logits_out[i] * scale;
      logits_out[i] = cap > 0 ? cap * std::tanh(l / cap) : l;
    }
  }
  dump("logits", logits_out, rows, c.n_vocab);
}

}  // namespace squeeze::model
