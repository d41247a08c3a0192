// train/draft_trainer.h — training a DFlash drafter against a frozen target on the target's
// own continuations (train/draft_data.h): each step takes one sequence, many random
// anchors in its continuation, all their blocks in one pass (train/draft_model.h), the
// target's frozen head, and cross-entropy at block positions 1 .. B − 1 weighted
// exp(−(k − 1)/γ); AdamW, warm-up + cosine, clipping; validation loss and acceptance
// (the mean run of leading drafts equal to the target's tokens, +1: an estimate of τ)
// on held-out sequences; checkpoints that resume exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "train/draft_data.h"
#include "train/draft_model.h"
#include "train/optimizer.h"
#include "train/trainer.h"

namespace squeeze::train {

struct DraftTrainOptions {
  int64_t steps = 1000;
  int64_t anchors = 16;        // blocks per sequence and step
  int64_t block = 0;           // 0: the drafter's block size
  float gamma = 7.0f;          // position weight decay
  float lr = 6e-4f, min_lr = 6e-5f;
  int64_t warmup = 40;
  double clip = 1.0;
  uint64_t seed = 1;
  int64_t val_every = 100;     // 0: only at the end
  int64_t val_anchors = 24;    // per validation sequence
  int64_t checkpoint_every = 0;
  std::string checkpoint_path, resume_path;
  int64_t stop_after = 0;      // > 0: stop after this step (checkpointed), to be resumed
  bool progress = true;
};

struct DraftStepRecord {
  int64_t step = 0;
  float loss = 0, lr = 0;
  float val_loss = -1, val_tau = -1;  // -1: not measured at this step
  double seconds = 0;                 // since the start of this run
};

class DraftTrainer {
 public:
  DraftTrainer(DraftTrainModel& model, const model::Model& target, std::vector<std::string> train_files,
               std::vector<std::string> val_files, DraftTrainOptions options);
  // Runs the remaining steps (all, or those after the resumed checkpoint's).
  void run();
  // Validation loss and τ estimate over the validation files.
  std::pair<float, float> validate();
  const std::vector<DraftStepRecord>& history() const { return history_; }
  int64_t step() const { return step_; }

  void save_checkpoint(const std::string& path) const;
  void load_checkpoint(const std::string& path);

 private:
  struct Batch {
    int64_t n_ctx = 0;
    std::vector<float> taps, embeds, weights;
    std::vector<int64_t> anchors;
    std::vector<int32_t> targets;
  };
  Batch make_batch(const DraftSample& s, std::vector<int64_t> anchors) const;
  std::vector<int64_t> sample_anchors(const DraftSample& s, int64_t n);
  uint64_t next_random();

  DraftTrainModel& model_;
  const model::Model& target_;
  std::vector<std::string> train_files_, val_files_;
  DraftTrainOptions opt_;
  int64_t block_;
  std::vector<float> head_;  // the target's output matrix, f32 [V, E] (frozen)
  AdamW adamw_;
  int64_t step_ = 0;
  uint64_t rng_ = 0;
  std::vector<DraftStepRecord> history_;
};

}  // namespace squeeze::train
