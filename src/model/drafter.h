// model/drafter.h — a DFlash drafter (model/draft_config.h) bound to the target it serves,
// and the per-sequence state that runs it.
//
// A drafter proposes a whole block in one forward pass: the block [anchor, mask × (B − 1)]
// at positions s .. s + B − 1 attends (non-causally) to itself and to the drafter's
// context, which is the target's own hidden states at the tapped layers for positions
// < s, fused (RMSNorm(fc · concat(taps))) and projected to K/V once per token by every
// draft layer. The drafter has no embedding or head of its own: block tokens are embedded
// with the target's table and draft logits come from the target's head after the
// drafter's final norm. Block position k predicts the token at s + k.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/thread_pool.h"
#include "gguf/reader.h"
#include "model/draft_config.h"
#include "model/model.h"
#include "quant/matmul.h"

namespace squeeze::model {

struct DraftLayerWeights {
  std::vector<float> attn_norm, q_norm, k_norm, ffn_norm;
  quant::QMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct DraftWeights {
  quant::QMatrix fc;               // [E rows, n_taps·E cols]
  std::vector<float> hidden_norm;  // [E]: the fusion's RMSNorm
  std::vector<DraftLayerWeights> layers;
  std::vector<float> output_norm;  // [E]
};

// A block token's input row ([n_embd]): the target's embedding with its embedding scale
// (Gemma's embedding module has it) but not Muse Glimmer's embedding RMSNorm, which the
// reference bypasses for DFlash. Inference and training both embed through it.
void embed_block_token(const Model& target, int32_t token, float* out);

class Drafter {
 public:
  // Maps and validates `path` and checks it fits `target` (width, taps, mask token);
  // errors are one line naming the file and the problem.
  static std::unique_ptr<Drafter> load(const std::string& path, const Model& target);
  // Without a target (reference checks): only DraftContext::propose_embedded runs.
  static std::unique_ptr<Drafter> load(const std::string& path);

  const DraftConfig& config() const { return config_; }
  const DraftWeights& weights() const { return weights_; }
  bool has_target() const { return target_ != nullptr; }
  const Model& target() const;
  const std::string& path() const { return file_.path(); }

 private:
  Drafter(gguf::File file, DraftConfig config, const Model* target);
  gguf::File file_;
  DraftConfig config_;
  const Model* target_;
  DraftWeights weights_;
};

// One sequence's drafter state: the K/V of its fused context, positions [begin(), size()).
// With every layer sliding, positions a block can no longer see are dropped.
class DraftContext {
 public:
  // trim = false keeps every position (checks of the trimming).
  explicit DraftContext(const Drafter& drafter, ThreadPool* pool = nullptr, bool trim = true);

  int64_t size() const { return end_; }
  int64_t begin() const { return begin_; }
  // Ingests the target's tapped hidden states of positions size() .. size() + n − 1:
  // `taps` is [n, n_taps·E] (Session's tap rows, in the drafter's tap order).
  void append(const float* taps, int64_t n);
  // Forgets positions ≥ pos. Throws when pos is below min_truncate_position().
  void truncate(int64_t pos);
  int64_t min_truncate_position() const;
  // Forgets everything and goes on from position pos (a rollback past what a trimmed
  // context still holds: drafts then see only the positions ingested from here on).
  void restart_at(int64_t pos);
  void clear();

  // Runs the block [anchor, mask × (block − 1)] at positions size() .. size() + block − 1
  // (2 ≤ block ≤ config().block_size) and returns the logits of block positions
  // 1 .. block − 1 ([block − 1, n_vocab]: the target head matrix, no logit scale or cap),
  // valid until the next call. `hidden_out`, when given, receives the final-norm hidden
  // state of every block position ([block, E]; the reference comparison).
  std::span<const float> propose(int32_t anchor, int64_t block, float* hidden_out = nullptr);
  // The block pass on given input embeddings ([block, E]); writes the final-norm hidden
  // states ([block, E]) to hidden_out.
  void propose_embedded(const float* embeds, int64_t block, float* hidden_out);

 private:
  void run_block(int64_t block);  // x_ holds the block's embeddings; leaves the final-norm rows in h_
  void attend(int64_t layer, const float* q, const float* kb, const float* vb, int64_t block, float* out);

  const Drafter& drafter_;
  const DraftConfig& cfg_;
  ThreadPool& pool_;
  int64_t begin_ = 0, end_ = 0;
  int64_t keep_ = 0;  // positions a block needs behind it (0: all)
  std::vector<std::vector<float>> k_, v_;  // per layer [end − begin, kv_dim]
  std::vector<float> fused_, x_, h_, q_, kb_, vb_, attn_, proj_, gate_, up_, logits_;
};

}  // namespace squeeze::model
