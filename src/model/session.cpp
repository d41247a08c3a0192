// model/session.cpp — sequence state, chunking of long prompts, scratch management.
#include "model/session.h"

#include <algorithm>

#include "core/error.h"

namespace squeeze::model {

KvCacheConfig sequence_cache_config(const ModelConfig& c, int64_t n_ctx, int64_t chunk, KvType type, int64_t headroom) {
  KvCacheConfig k;
  k.n_kv_heads = c.n_head_kv;
  k.head_dim = c.head_dim;
  for (int64_t i = 0; i < c.n_layer; ++i) k.layer_windows.push_back(c.is_local[static_cast<size_t>(i)] ? c.sliding_window : 0);
  k.context_limit = n_ctx;
  // The planner's rule (kv_slots.h): a prefill chunk of n tokens needs n - 1 slots of
  // headroom in a local ring.
  k.headroom = local_ring_headroom(chunk, headroom);
  k.type = type;
  return k;
}

Session::Session(const Model& model, SessionParams params)
    : model_(model),
      cfg_(model.config()),
      pool_(params.pool ? *params.pool : default_thread_pool()),
      n_ctx_(params.n_ctx > 0 ? params.n_ctx : model.config().n_ctx),
      chunk_(std::max<int64_t>(1, params.batch)),
      batch_invariant_(params.batch_invariant),
      cache_(sequence_cache_config(model.config(), n_ctx_, chunk_, params.kv_type, params.kv_headroom)),
      scratch_(model.config(), std::min(chunk_, cache_.max_chunk())) {
  SQZ_CHECK(n_ctx_ > 0, "context length must be positive");
  chunk_ = scratch_.max_rows();
}

void Session::set_taps(std::vector<int64_t> layers) {
  for (int64_t l : layers) SQZ_CHECK(l >= 0 && l < cfg_.n_layer, "tap layer ", l, " outside the model's ", cfg_.n_layer, " layers");
  tap_layers_ = std::move(layers);
  taps_.clear();
}

std::span<const float> Session::forward(std::span<const int32_t> tokens, bool all_logits) {
  return forward(tokens, {}, all_logits);
}

std::span<const float> Session::forward(std::span<const int32_t> tokens, std::span<const float* const> embeddings,
                                        bool all_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  SQZ_CHECK(n > 0, "forward() needs at least one token");
  SQZ_CHECK(embeddings.empty() || embeddings.size() == tokens.size(), "forward(): ", embeddings.size(),
            " embedding rows for ", n, " tokens");
  if (position() + n > n_ctx_)
    fail("the sequence would reach ", position() + n, " tokens, past the context length ", n_ctx_);
  const int64_t V = cfg_.n_vocab;
  out_logits_.resize(static_cast<size_t>((all_logits ? n : 1) * V));
  // One row per chunk unless every position's logits are wanted: at a 262k vocabulary a
  // whole chunk of rows would be 512 MiB that nobody reads.
  logits_.resize(static_cast<size_t>((all_logits ? std::min(chunk_, n) : 1) * V));
  const int64_t tap_width = static_cast<int64_t>(tap_layers_.size()) * cfg_.n_embd;
  taps_.resize(static_cast<size_t>(n * tap_width));
  for (int64_t done = 0; done < n;) {
    const int64_t m = std::min(chunk_, n - done);
    const bool last = done + m == n;
    const SequenceChunk chunk{.cache = &cache_, .tokens = tokens.data() + done, .n = m, .all_logits = all_logits,
                              .embeddings = embeddings.empty() ? nullptr : embeddings.data() + done};
    const bool tapping = !tap_layers_.empty();
    forward_step(model_, pool_, scratch_, {&chunk, 1}, logits_.data(),
                 {.batch_invariant = batch_invariant_, .dump = &dump_, .profile = profile_,
                  .tap_layers = tapping ? &tap_layers_ : nullptr,
                  .taps = tapping ? taps_.data() + done * tap_width : nullptr});
    if (all_logits) {
      std::copy_n(logits_.data(), m * V, out_logits_.data() + done * V);
    } else if (last) {
      std::copy_n(logits_.data(), V, out_logits_.data());
    }
    done += m;
  }
  return out_logits_;
}

}  // namespace squeeze::model
