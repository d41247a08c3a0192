// train/draft_model.h — a DFlash drafter held in f32 for training (the tensors of
// model::DraftConfig::weight_tensors, with gradients), its training forward on the
// autograd tape, and export as a `dflash` GGUF that model::Drafter loads.
//
// The training forward runs every block of one sequence in one pass (the reference
// recipe): keys are the sequence's fused context rows followed by all blocks' rows; a
// block anchored at position a (tokens [x_a, mask × (B − 1)] at positions a .. a + B − 1)
// sees the context strictly before a and its own block (both within the sliding window
// on sliding layers), nothing of other blocks. Its rows are then exactly what the
// inference pass (model::DraftContext) computes for that block.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"
#include "model/draft_config.h"
#include "model/model.h"
#include "train/glimmer_model.h"
#include "train/tape.h"

namespace squeeze::train {

class DraftTrainModel {
 public:
  // Fresh weights: matrices N(0, 1/cols), the residual writers (attn_output, ffn_down)
  // further × 1/sqrt(2·n_layer), norms 1.
  static DraftTrainModel init(const model::DraftConfig& config, uint64_t seed);
  // Fresh weights as init(), then every draft layer i a copy of the target's layer
  // first_layer + i (norms, projections, FFN; q / k rows reordered to NeoX pairing when the
  // target rotates adjacent pairs), fc reading the last tap only (an identity block) and
  // the fusion norm the first copied layer's attention norm: the draft layers start as
  // the target's own computation on its tapped features instead of from noise (EAGLE's
  // drafters start from a target layer too). Needs the target's attention layout.
  static DraftTrainModel init_from_target(const model::DraftConfig& config, const model::Model& target,
                                          int64_t first_layer, uint64_t seed);
  // A drafter GGUF (F32 or any type squeeze computes with) as the starting point.
  static DraftTrainModel load(const std::string& path);

  const model::DraftConfig& config() const { return config_; }
  std::vector<Parameter>& params() { return params_; }
  const std::vector<Parameter>& params() const { return params_; }
  int64_t n_params() const;
  void zero_grad();

  // The final-norm hidden states of every block row ([anchors.size() · B, E]) for one
  // sequence: `taps` [n_ctx, n_taps · E] are the target's tapped rows of its positions,
  // `block_embeds` [anchors.size() · B, E] the target-embedded block tokens, block n at
  // positions anchors[n] .. anchors[n] + B − 1 (anchors[n] ≤ n_ctx). with_grad = false:
  // parameters enter as constants (validation).
  Var forward(Tape<float>& t, std::span<const float> taps, int64_t n_ctx, std::span<const float> block_embeds,
              std::span<const int64_t> anchors, int64_t block, bool with_grad = true);

  // Every tensor, atomically: norms F32, matrices as `type` (F32 unless a matrix's rows do
  // not fit the type's blocks); `replaces` may name the file being replaced.
  void export_gguf(const std::string& path, const std::string& name, const std::string& replaces = {},
                   gguf::GgmlType type = gguf::GgmlType::F32) const;

 private:
  explicit DraftTrainModel(model::DraftConfig config);
  model::DraftConfig config_;
  std::vector<Parameter> params_;  // in weight_tensors() order
};

}  // namespace squeeze::train
