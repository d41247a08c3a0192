// model/session.cpp — sequence state, chunking of long prompts, scratch management.
#include "model/session.h"

#include <algorithm>

#include "core/error.h"

namespace squeeze::model {

namespace {
KvCacheConfig cache_config(const ModelConfig& c, int64_t n_ctx, int64_t chunk, const SessionParams& p) {
  KvCacheConfig k;
  k.n_kv_heads = c.n_head_kv;
  k.head_dim = c.head_dim;
  for (int64_t i = 0; i < c.n_layer; ++i) k.layer_windows.push_back(c.is_local[static_cast<size_t>(i)] ? c.sliding_window : 0);
  k.context_limit = n_ctx;
  // The planner's rule (kv_slots.h): a prefill chunk of n tokens needs n - 1 slots of
  // headroom in a local ring.
  k.headroom = local_ring_headroom(chunk, p.kv_headroom);
  k.type = p.kv_type;
  return k;
}
}  // namespace

Session::Session(const Model& model, SessionParams params)
    : model_(model),
      cfg_(model.config()),
      pool_(params.pool ? *params.pool : default_thread_pool()),
      n_ctx_(params.n_ctx > 0 ? params.n_ctx : model.config().n_ctx),
      chunk_(std::max<int64_t>(1, params.batch)),
      cache_(cache_config(model.config(), n_ctx_, chunk_, params)) {
  SQZ_CHECK(n_ctx_ > 0, "context length must be positive");
  chunk_ = std::min(chunk_, cache_.max_chunk());
  const auto sz = [&](int64_t width) { return static_cast<size_t>(chunk_ * width); };
  x_.resize(sz(cfg_.n_embd));
  h_.resize(sz(cfg_.n_embd));
  proj_.resize(sz(cfg_.n_embd));
  q_.resize(sz(cfg_.q_dim()));
  attn_.resize(sz(cfg_.q_dim()));
  if (cfg_.attn_gate) attn_gate_.resize(sz(cfg_.q_dim()));
  k_.resize(sz(cfg_.kv_dim()));
  v_.resize(sz(cfg_.kv_dim()));
  gate_.resize(sz(cfg_.n_ff));
  up_.resize(sz(cfg_.n_ff));
}

std::span<const float> Session::forward(std::span<const int32_t> tokens, bool all_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  SQZ_CHECK(n > 0, "forward() needs at least one token");
  if (position() + n > n_ctx_)
    fail("the sequence would reach ", position() + n, " tokens, past the context length ", n_ctx_);
  const int64_t V = cfg_.n_vocab;
  out_logits_.resize(static_cast<size_t>((all_logits ? n : 1) * V));
  logits_.resize(static_cast<size_t>(chunk_ * V));
  for (int64_t done = 0; done < n;) {
    const int64_t m = std::min(chunk_, n - done);
    const bool last = done + m == n;
    forward_chunk(tokens.data() + done, m, all_logits, logits_.data());
    if (all_logits) {
      std::copy_n(logits_.data(), m * V, out_logits_.data() + done * V);
    } else if (last) {
      std::copy_n(logits_.data(), V, out_logits_.data());
    }
    done += m;
  }
  return out_logits_;
}

void Session::dump(const std::string& name, const float* data, int64_t rows, int64_t cols) const {
  if (dump_) dump_(name, data, rows, cols);
}

}  // namespace squeeze::model
