// model/session.h — one sequence being run through a model: its KV cache, scratch
// buffers and position. forward() runs a batch of tokens (prefill: batched GEMMs;
// one token: GEMVs) and returns logits; truncate() rolls the sequence back
// (speculative decoding, context edits).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace squeeze::model {

struct SessionParams {
  int64_t n_ctx = 0;               // 0: the model's context length
  int64_t batch = 64;              // prefill tokens per forward step (GEMM M)
  KvType kv_type = KvType::F16;
  int64_t kv_headroom = 0;         // ring slots beyond the window; 0: local_ring_headroom(batch)
  ThreadPool* pool = nullptr;      // null: default_thread_pool()
  bool batch_invariant = false;    // ForwardOptions::batch_invariant
};

// The KV cache a sequence of the model gets: n_ctx positions, local rings with the headroom
// that prefill chunks of `chunk` tokens need (kv_slots.h), unless `headroom` > 0 asks for more.
KvCacheConfig sequence_cache_config(const ModelConfig& c, int64_t n_ctx, int64_t chunk, KvType type,
                                    int64_t headroom = 0);

class Session {
 public:
  Session(const Model& model, SessionParams params = {});

  // Runs `tokens` at positions [position(), position() + n). Returns the logits of the
  // last token ([n_vocab]), or of every token ([n, n_vocab]) when all_logits.
  std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits = false);
  // As above, with per-token embeddings (SequenceChunk::embeddings; empty: none): a row
  // whose pointer is set enters the model as those n_embd floats instead of its token.
  std::span<const float> forward(std::span<const int32_t> tokens, std::span<const float* const> embeddings,
                                 bool all_logits = false);

  const Model& model() const { return model_; }
  int64_t position() const { return cache_.size(); }
  int64_t n_ctx() const { return n_ctx_; }
  void truncate(int64_t pos) { cache_.truncate(pos); }
  void reset() { cache_.clear(); }
  // Ring snapshots (KvRingSnapshot): come back to an earlier position after the local
  // layers' rings have moved past it.
  KvRingSnapshot snapshot_rings() const { return cache_.snapshot_rings(); }
  void restore_rings(const KvRingSnapshot& snap) { cache_.restore_rings(snap); }
  KvMemory kv_memory() const { return cache_.memory(); }
  const KvCache& cache() const { return cache_; }
  // Batch-invariant products (SessionParams::batch_invariant) for the following steps.
  void set_batch_invariant(bool on) { batch_invariant_ = on; }
  bool batch_invariant() const { return batch_invariant_; }
  void set_dump(DumpFn dump) { dump_ = std::move(dump); }
  // From the next forward() on, keeps the hidden states after these layers for every
  // token run (empty: none): taps() is [tokens of the last forward(), n_layers · n_embd].
  void set_taps(std::vector<int64_t> layers);
  std::span<const float> taps() const { return taps_; }
  // Op times of every following step accumulate into *profile (null: stop timing).
  void set_profile(StepProfile* profile) { profile_ = profile; }

 private:

  const Model& model_;
  const ModelConfig& cfg_;
  ThreadPool& pool_;
  int64_t n_ctx_;
  int64_t chunk_;
  bool batch_invariant_;
  KvCache cache_;
  DumpFn dump_;
  StepProfile* profile_ = nullptr;
  ForwardScratch scratch_;  // for chunk_ tokens
  std::vector<float> logits_, out_logits_;
  std::vector<int64_t> tap_layers_;
  std::vector<float> taps_;
};

}  // namespace squeeze::model
