// train/moe_lm.h — a small MoE language model trained expert-parallel: the Glimmer family's
// embeddings, attention blocks, norms and head, replicated on every rank and trained
// data-parallel (their gradients summed over ranks), with every layer's dense FFN replaced
// by a MoK MoE layer (mok/layer.h) whose experts are sharded across the ranks.
//
// One training step on each rank: its share of the global batch forward (each MoE layer a
// collective dispatch / experts / combine), the loss scaled by 1/R so that the sum over
// ranks is the global mean, backward (each MoE layer's backward a collective too; its
// router gradient is summed over ranks inside the layer), the replicated gradients summed
// over ranks, one global-norm clip (replicated parameters once, every rank's experts), AdamW.
// The sum over ranks makes R ranks with B sequences each the same step as one rank with
// R·B sequences, up to the order of float additions (tested).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mok/layer.h"
#include "mok/transport.h"
#include "train/glimmer_model.h"
#include "train/optimizer.h"

namespace squeeze::train {

struct MoeLmOptions {
  int n_experts = 8, top_k = 2;
  int64_t expert_ff = 256;          // each expert's SwiGLU width
  mok::Payload payload = mok::Payload::BF16;
  mok::LayerOptions layer;          // dispatch / combine styles, fused pipeline
  int64_t batch = 4, seq_len = 64;  // sequences per rank per step, tokens per sequence
  uint64_t seed = 1;
  AdamWParams adamw;
  double clip = 1.0;
};

class MoeLm {
 public:
  // Collective. `dense` gives the attention stack (its n_ff is ignored: the FFNs are MoE).
  MoeLm(const model::ModelConfig& dense, text::TokenizerData tokenizer, const MoeLmOptions& opt,
        mok::Transport& transport);
  // Collective: one optimiser step on this rank's batch.size() / seq_len sequences
  // (targets: the inputs shifted by one). Returns the global mean loss (every rank the same).
  double step(std::span<const int32_t> inputs, std::span<const int32_t> targets, float lr);
  // Parameters of the whole model (all ranks' experts), and of this rank's copy.
  int64_t n_params_total() const;
  int64_t n_params_local() const;
  const mok::MoeConfig& moe_config() const { return cfg_; }
  // This rank's parameters in a fixed order (replicated ones first), for tests.
  const std::vector<Parameter>& params() const { return model_.params(); }

 private:
  void load_moe_weights();  // Parameter values -> the layers' MoeWeights
  void store_moe_grads();   // the layers' gradients -> Parameter grads

  MoeLmOptions opt_;
  mok::Transport& t_;
  GlimmerModel model_;  // dense parameters, then this rank's MoE parameters (see moe_index_)
  mok::MoeConfig cfg_;
  std::vector<mok::MoeWeights> weights_, grads_;        // per layer
  std::vector<std::unique_ptr<mok::MoeLayer>> layers_;  // per layer
  size_t first_moe_ = 0;                                // params from here are MoE
  std::vector<bool> replicated_;                        // per param: same on every rank
  std::unique_ptr<AdamW> adamw_;
};

}  // namespace squeeze::train
