// model/drafter.cpp — loading a DFlash drafter and running its context ingestion and block
// pass. Shapes in comments: B = block tokens, E = width, H·D = q_dim, Hk·D = kv_dim,
// T = n_taps, V = the target's vocabulary.
#include "model/drafter.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/ops.h"
#include "quant/traits.h"

namespace squeeze::model {

namespace {

using kernels::cpu::ops;

DraftWeights bind_draft_weights(const gguf::File& f, const DraftConfig& c) {
  DraftWeights w;
  w.fc = bind_matrix(f, "fc.weight");
  w.hidden_norm = read_f32(f, "enc.output_norm.weight");
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    DraftLayerWeights& l = w.layers[static_cast<size_t>(i)];
    l.attn_norm = read_f32(f, b + "attn_norm.weight");
    l.wq = bind_matrix(f, b + "attn_q.weight");
    l.wk = bind_matrix(f, b + "attn_k.weight");
    l.wv = bind_matrix(f, b + "attn_v.weight");
    l.q_norm = read_f32(f, b + "attn_q_norm.weight");
    l.k_norm = read_f32(f, b + "attn_k_norm.weight");
    l.wo = bind_matrix(f, b + "attn_output.weight");
    l.ffn_norm = read_f32(f, b + "ffn_norm.weight");
    l.w_gate = bind_matrix(f, b + "ffn_gate.weight");
    l.w_up = bind_matrix(f, b + "ffn_up.weight");
    l.w_down = bind_matrix(f, b + "ffn_down.weight");
  }
  w.output_norm = read_f32(f, "output_norm.weight");
  return w;
}

// Y[n, W.rows] = X[n, W.cols] · Wᵀ.
void linear(ThreadPool& pool, const quant::QMatrix& W, const float* X, int64_t n, float* Y) {
  if (n == 1) quant::gemv(pool, W, X, Y);
  else quant::gemm(pool, W, {.X = X, .M = n, .ldx = W.cols, .Y = Y, .ldy = W.rows});
}

void rmsnorm_rows(const float* x, const float* w, float* y, int64_t n, int64_t width, float eps) {
  for (int64_t i = 0; i < n; ++i) ops().rmsnorm(x + i * width, w, y + i * width, width, eps);
}

void rope_rows(float* x, int64_t n, int64_t pos0, int64_t n_heads, int64_t head_dim, float base) {
  for (int64_t i = 0; i < n; ++i)
    ops().rope(x + i * n_heads * head_dim, {.n_heads = n_heads, .head_dim = head_dim, .rot_dim = head_dim,
                                             .position = pos0 + i, .freq_base = base, .freq_scale = 1.0f,
                                             .style = kernels::cpu::RopeStyle::NeoX});
}

}  // namespace

void embed_block_token(const Model& target, int32_t token, float* out) {
  dequantize_row(target.weights().token_embd, token, out);
  const float scale = target.config().embd_scale;
  if (scale != 1.0f)
    for (int64_t e = 0; e < target.config().n_embd; ++e) out[e] *= scale;
}

Drafter::Drafter(gguf::File file, DraftConfig config, const Model* target)
    : file_(std::move(file)), config_(std::move(config)), target_(target) {
  weights_ = bind_draft_weights(file_, config_);
}

const Model& Drafter::target() const {
  SQZ_CHECK(target_ != nullptr, path(), ": the drafter was loaded without its target model");
  return *target_;
}

std::unique_ptr<Drafter> Drafter::load(const std::string& path) {
  gguf::File file(path);
  DraftConfig config = draft_config_from_gguf(file);
  return std::unique_ptr<Drafter>(new Drafter(std::move(file), std::move(config), nullptr));
}

std::unique_ptr<Drafter> Drafter::load(const std::string& path, const Model& target) {
  gguf::File file(path);
  DraftConfig config = draft_config_from_gguf(file);
  try {
    config.check_target(target.config());
  } catch (const Error& e) {
    throw e.with_context(path);
  }
  return std::unique_ptr<Drafter>(new Drafter(std::move(file), std::move(config), &target));
}

DraftContext::DraftContext(const Drafter& drafter, ThreadPool* pool, bool trim)
    : drafter_(drafter), cfg_(drafter.config()), pool_(pool ? *pool : default_thread_pool()) {
  k_.resize(static_cast<size_t>(cfg_.n_layer));
  v_.resize(static_cast<size_t>(cfg_.n_layer));
  bool all_sliding = trim && cfg_.sliding_window > 0;
  for (int64_t l = 0; l < cfg_.n_layer; ++l) all_sliding = all_sliding && cfg_.sliding(l);
  // The first block query (at size()) sees keys ≥ size() − window; keep a block's worth
  // more so trimming happens in steps rather than on every append.
  keep_ = all_sliding ? cfg_.sliding_window + cfg_.block_size : 0;
}

void DraftContext::append(const float* taps, int64_t n) {
  SQZ_CHECK(n >= 0, "draft context: negative row count");
  if (n == 0) return;
  const Drafter& d = drafter_;
  const DraftWeights& w = d.weights();
  const int64_t E = cfg_.n_embd, KD = cfg_.kv_dim(), D = cfg_.head_dim;
  SQZ_CHECK(end_ + n <= cfg_.n_ctx, "draft context: ", end_ + n, " positions exceed the drafter's context of ", cfg_.n_ctx);
  fused_.resize(static_cast<size_t>(n * E));
  linear(pool_, w.fc, taps, n, fused_.data());                          // c[n, E] = fc · concat(taps)
  rmsnorm_rows(fused_.data(), w.hidden_norm.data(), fused_.data(), n, E, cfg_.rms_eps);
  kb_.resize(static_cast<size_t>(n * KD));
  vb_.resize(static_cast<size_t>(n * KD));
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    const DraftLayerWeights& L = w.layers[static_cast<size_t>(l)];
    linear(pool_, L.wk, fused_.data(), n, kb_.data());                 // the layer's own K/V of the context
    linear(pool_, L.wv, fused_.data(), n, vb_.data());
    rmsnorm_rows(kb_.data(), L.k_norm.data(), kb_.data(), n * cfg_.n_head_kv, D, cfg_.rms_eps);
    rope_rows(kb_.data(), n, end_, cfg_.n_head_kv, D, cfg_.rope_base);
    auto& K = k_[static_cast<size_t>(l)];
    auto& V = v_[static_cast<size_t>(l)];
    K.insert(K.end(), kb_.begin(), kb_.end());
    V.insert(V.end(), vb_.begin(), vb_.end());
  }
  end_ += n;
  if (keep_ > 0 && end_ - begin_ > 2 * keep_) {  // drop what no block can see any more
    const int64_t drop = end_ - keep_ - begin_;
    for (int64_t l = 0; l < cfg_.n_layer; ++l) {
      auto& K = k_[static_cast<size_t>(l)];
      auto& V = v_[static_cast<size_t>(l)];
      K.erase(K.begin(), K.begin() + drop * KD);
      V.erase(V.begin(), V.begin() + drop * KD);
    }
    begin_ += drop;
  }
}

void DraftContext::truncate(int64_t pos) {
  SQZ_CHECK(pos >= 0 && pos <= end_, "draft context: cannot truncate to ", pos, " (holds up to ", end_, ")");
  if (pos == 0) return clear();
  SQZ_CHECK(pos >= min_truncate_position(), "draft context: position ", pos,
            " needs keys the sliding window already dropped (holds from ", begin_, ")");
  const int64_t KD = cfg_.kv_dim();
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    k_[static_cast<size_t>(l)].resize(static_cast<size_t>((pos - begin_) * KD));
    v_[static_cast<size_t>(l)].resize(static_cast<size_t>((pos - begin_) * KD));
  }
  end_ = pos;
}

int64_t DraftContext::min_truncate_position() const {
  // a block at pos needs the window before it
  return keep_ == 0 ? 0 : std::min(end_, begin_ + keep_ - cfg_.block_size);
}

void DraftContext::clear() { restart_at(0); }

void DraftContext::restart_at(int64_t pos) {
  SQZ_CHECK(pos >= 0, "draft context: negative position");
  for (auto& k : k_) k.clear();
  for (auto& v : v_) v.clear();
  begin_ = end_ = pos;
}

// out[i, h·D] = softmax over the keys query i may see of scale · q·k, times V; the keys
// are the context [begin_, end_) then the block's own B rows, non-causal.
void DraftContext::attend(int64_t layer, const float* q, const float* kb, const float* vb, int64_t block, float* out) {
  const int64_t H = cfg_.n_head, Hk = cfg_.n_head_kv, D = cfg_.head_dim, KD = cfg_.kv_dim(), QD = cfg_.q_dim();
  const int64_t group = H / Hk, s = end_;
  const bool sliding = cfg_.sliding(layer);
  const int64_t W = cfg_.sliding_window;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float* K = k_[static_cast<size_t>(layer)].data();
  const float* V = v_[static_cast<size_t>(layer)].data();
  pool_.parallel_for(0, block * H, [&](int64_t t0, int64_t t1) {
    std::vector<float> scores;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = t / H, h = t % H, g = h / group, p = s + i;
      const float* qi = q + i * QD + h * D;
      const int64_t c0 = sliding ? std::max(begin_, p - W) : begin_;   // context keys [c0, s)
      const int64_t b0 = sliding ? std::max<int64_t>(0, i - W) : 0;     // block keys [b0, b1)
      const int64_t b1 = sliding ? std::min(block, i + W + 1) : block;
      const int64_t nc = std::max<int64_t>(0, s - c0), nb = b1 - b0;
      scores.resize(static_cast<size_t>(nc + nb));
      for (int64_t j = 0; j < nc; ++j) scores[j] = scale * ops().dot(qi, K + (c0 - begin_ + j) * KD + g * D, D);
      for (int64_t j = 0; j < nb; ++j) scores[nc + j] = scale * ops().dot(qi, kb + (b0 + j) * KD + g * D, D);
      ops().softmax(scores.data(), nc + nb);
      float* o = out + i * QD + h * D;
      std::fill(o, o + D, 0.0f);
      for (int64_t j = 0; j < nc; ++j) ops().axpy(scores[j], V + (c0 - begin_ + j) * KD + g * D, o, D);
      for (int64_t j = 0; j < nb; ++j) ops().axpy(scores[nc + j], vb + (b0 + j) * KD + g * D, o, D);
    }
  });
}

std::span<const float> DraftContext::propose(int32_t anchor, int64_t block, float* hidden_out) {
  SQZ_CHECK(block >= 2 && block <= cfg_.block_size, "draft block of ", block, " tokens (2..", cfg_.block_size, ")");
  const Model& target = drafter_.target();
  const ModelConfig& tc = target.config();
  SQZ_CHECK(anchor >= 0 && anchor < tc.n_vocab, "draft anchor ", anchor, " outside the vocabulary");
  const int64_t B = block, E = cfg_.n_embd;
  x_.resize(static_cast<size_t>(B * E));
  for (int64_t i = 0; i < B; ++i)
    embed_block_token(target, i == 0 ? anchor : static_cast<int32_t>(cfg_.mask_token_id), x_.data() + i * E);
  run_block(B);
  if (hidden_out) std::copy_n(h_.data(), B * E, hidden_out);
  // the target's head matrix on positions 1 .. B − 1 (position 0 is the anchor itself);
  // as in the reference, no logit scale or soft-cap (both keep the argmax)
  logits_.resize(static_cast<size_t>((B - 1) * tc.n_vocab));
  linear(pool_, target.weights().output, h_.data() + E, B - 1, logits_.data());
  return logits_;
}

void DraftContext::propose_embedded(const float* embeds, int64_t block, float* hidden_out) {
  SQZ_CHECK(block >= 2 && block <= cfg_.block_size, "draft block of ", block, " tokens (2..", cfg_.block_size, ")");
  x_.assign(embeds, embeds + block * cfg_.n_embd);
  run_block(block);
  std::copy_n(h_.data(), block * cfg_.n_embd, hidden_out);
}

void DraftContext::run_block(int64_t block) {
  SQZ_CHECK(end_ + block <= cfg_.n_ctx, "draft block would pass the drafter's context of ", cfg_.n_ctx);
  const DraftWeights& w = drafter_.weights();
  const int64_t B = block, E = cfg_.n_embd, QD = cfg_.q_dim(), KD = cfg_.kv_dim(), F = cfg_.n_ff, D = cfg_.head_dim;
  const auto size = [](int64_t n) { return static_cast<size_t>(n); };
  h_.resize(size(B * E)), proj_.resize(size(B * E));
  q_.resize(size(B * QD)), attn_.resize(size(B * QD)), kb_.resize(size(B * KD)), vb_.resize(size(B * KD));
  gate_.resize(size(B * F)), up_.resize(size(B * F));
  float *x = x_.data(), *h = h_.data(), *q = q_.data(), *kb = kb_.data(), *vb = vb_.data();
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    const DraftLayerWeights& L = w.layers[static_cast<size_t>(l)];
    rmsnorm_rows(x, L.attn_norm.data(), h, B, E, cfg_.rms_eps);
    linear(pool_, L.wq, h, B, q);                                      // q[B, H·D]
    linear(pool_, L.wk, h, B, kb);                                     // the block's K/V, never stored
    linear(pool_, L.wv, h, B, vb);
    rmsnorm_rows(q, L.q_norm.data(), q, B * cfg_.n_head, D, cfg_.rms_eps);
    rmsnorm_rows(kb, L.k_norm.data(), kb, B * cfg_.n_head_kv, D, cfg_.rms_eps);
    rope_rows(q, B, end_, cfg_.n_head, D, cfg_.rope_base);
    rope_rows(kb, B, end_, cfg_.n_head_kv, D, cfg_.rope_base);
    attend(l, q, kb, vb, B, attn_.data());
    linear(pool_, L.wo, attn_.data(), B, proj_.data());
    ops().add(x, proj_.data(), x, B * E);
    rmsnorm_rows(x, L.ffn_norm.data(), h, B, E, cfg_.rms_eps);
    linear(pool_, L.w_gate, h, B, gate_.data());
    linear(pool_, L.w_up, h, B, up_.data());
    ops().swiglu(gate_.data(), up_.data(), gate_.data(), B * F);
    linear(pool_, L.w_down, gate_.data(), B, proj_.data());
    ops().add(x, proj_.data(), x, B * E);
  }
  rmsnorm_rows(x, w.output_norm.data(), h, B, E, cfg_.rms_eps);
}

}  // namespace squeeze::model
