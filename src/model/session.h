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
#include "model/kv_cache.h"
#include "model/model.h"

namespace squeeze::model {

// Called with every named intermediate of a forward pass ("blk.3.attn_q", "logits", ...):
// rows = tokens of the batch, cols = features. For debugging and reference comparison.
using DumpFn = std::function<void(const std::string& name, const float* data, int64_t rows, int64_t cols)>;

struct SessionParams {
  int64_t n_ctx = 0;               // 0: the model's context length
  int64_t batch = 64;              // prefill tokens per forward step (GEMM M)
  KvType kv_type = KvType::F16;
  int64_t kv_headroom = 0;         // ring slots beyond the window; 0: local_ring_headroom(batch)
  ThreadPool* pool = nullptr;      // null: default_thread_pool()
};

class Session {
 public:
  Session(const Model& model, SessionParams params = {});

  // Runs `tokens` at positions [position(), position() + n). Returns the logits of the
  // last token ([n_vocab]), or of every token ([n, n_vocab]) when all_logits.
  std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits = false);

  int64_t position() const { return cache_.size(); }
  int64_t n_ctx() const { return n_ctx_; }
  void truncate(int64_t pos) { cache_.truncate(pos); }
  void reset() { cache_.clear(); }
  KvMemory kv_memory() const { return cache_.memory(); }
  const KvCache& cache() const { return cache_; }
  void set_dump(DumpFn dump) { dump_ = std::move(dump); }

 private:
  // One step of at most chunk_ tokens (the forward pass itself, model/glimmer.cpp).
  void forward_chunk(const int32_t* tokens, int64_t n, bool all_logits, float* logits_out);
  void dump(const std::string& name, const float* data, int64_t rows, int64_t cols) const;

  const Model& model_;
  const ModelConfig& cfg_;
  ThreadPool& pool_;
  int64_t n_ctx_;
  int64_t chunk_;
  KvCache cache_;
  DumpFn dump_;

  // Scratch, sized for chunk_ tokens: [chunk_, width] each.
  std::vector<float> x_, h_, q_, k_, v_, attn_, attn_gate_, proj_, gate_, up_, logits_;
  std::vector<float> out_logits_;
};

}  // namespace squeeze::model
