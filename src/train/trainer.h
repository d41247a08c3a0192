// train/trainer.h — the training loop over a token stream: micro-batches with gradient
// accumulation, clipping, AdamW on a warm-up + cosine schedule, periodic validation,
// a progress bar (loss, tokens/s, ETA) and checkpoints that resume bit-exactly.
//
// The objective is pluggable (LossFn): next-token cross-entropy for training from
// scratch, a KL to a teacher's logits for distillation — the loop is the same.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "train/glimmer_model.h"
#include "train/optimizer.h"

namespace squeeze::train {

struct TrainOptions {
  int64_t steps = 100;          // optimiser steps of the whole run
  int64_t batch = 8;            // sequences per micro-batch
  int64_t seq_len = 64;         // tokens per sequence
  int64_t accum = 1;            // micro-batches per optimiser step (gradient accumulation)
  float lr = 1e-3f, min_lr = 1e-4f;
  int64_t warmup = 0;
  AdamWParams adamw = {};
  double clip = 1.0;            // global gradient-norm limit; <= 0: off
  int64_t eval_every = 0;       // steps between validation losses; 0: only at the end
  int64_t eval_sequences = 16;  // validation sequences per evaluation
  int64_t checkpoint_every = 0; // steps between checkpoints (to checkpoint_path); 0: none
  std::string checkpoint_path = "";
  // The checkpoint this run resumed from: the one input checkpoint_path may replace (a
  // documented in-place update, safe because checkpoints are written atomically).
  std::string resume_path = "";
  uint64_t seed = 1;            // data order
  // The training stream is cut into windows of seq_len + 1 tokens at a random phase per
  // epoch; shuffled visits them in a fresh random order each epoch (every window once),
  // sequential reads them in stream order (consecutive windows share a micro-batch).
  enum class Order { shuffled, sequential } order = Order::shuffled;
  bool progress = true;         // draw a progress bar on stderr

  void validate() const;
};

// The loss of one micro-batch from the model's logits [B·S, V]: inputs and targets are
// [B·S] (target = the next token of the stream).
using LossFn = std::function<Var(Tape<float>& t, Var logits, std::span<const int32_t> inputs,
                                 std::span<const int32_t> targets, int64_t seq_len)>;
LossFn cross_entropy_loss();

// Everything besides weights and moments that a resumed run needs.
struct TrainState {
  int64_t step = 0;        // optimiser steps done
  uint64_t data_pos = 0;   // sequential: next window's start in the stream; shuffled: windows of this epoch done
  uint64_t rng = 0;        // splitmix64 state (data order; on-policy prompts and sampling)
  uint64_t epoch = 0;      // shuffled: epochs begun
  uint64_t epoch_seed = 0; // shuffled: this epoch's phase and permutation
};

// The next splitmix64 draw from state.rng: every random choice of a run comes from here,
// so a checkpoint that stores the state resumes the same choices.
uint64_t next_random(TrainState& state);

// Where micro-batches come from: fills inputs and targets ([batch · seq_len] each, row
// b·seq_len + s; target -1 = not scored) and advances the state. The default reads the
// training stream in order; on-policy distillation generates them (train/on_policy.h).
using BatchFn = std::function<void(TrainState& state, std::vector<int32_t>& inputs, std::vector<int32_t>& targets)>;

struct StepRecord {
  int64_t step = 0;        // 1-based: the step just finished
  float loss = 0;          // mean training loss over the step's micro-batches
  float lr = 0;
  double grad_norm = 0;    // before clipping
  float val_loss = -1;     // cross-entropy on the validation stream; -1 when not evaluated
};

class Trainer {
 public:
  Trainer(GlimmerModel& model, std::span<const int32_t> train_tokens, std::span<const int32_t> val_tokens,
          TrainOptions options, LossFn loss = cross_entropy_loss(), BatchFn batches = nullptr);

  // Trains until state().step reaches `until` (-1: options.steps).
  void run(int64_t until = -1);
  // Mean next-token cross-entropy over the first eval_sequences of the validation stream.
  float evaluate();

  // Model weights and config, tokenizer, AdamW moments and TrainState, in one GGUF (that
  // is also a loadable model). load_checkpoint restores all of them into this trainer.
  void save_checkpoint(const std::string& path) const;
  void load_checkpoint(const std::string& path);

  const TrainState& state() const { return state_; }
  const std::vector<StepRecord>& history() const { return history_; }
  const TrainOptions& options() const { return opt_; }

 private:
  // Fills inputs/targets with the next micro-batch and advances the data position.
  void next_batch(std::vector<int32_t>& inputs, std::vector<int32_t>& targets);
  // The start of the next window in the training stream.
  uint64_t next_window_start();
  float micro_step(const std::vector<int32_t>& inputs, const std::vector<int32_t>& targets);

  GlimmerModel& model_;
  std::span<const int32_t> train_, val_;
  TrainOptions opt_;
  LossFn loss_;
  BatchFn batches_;
  AdamW adamw_;
  TrainState state_;
  std::vector<uint32_t> epoch_order_;  // shuffled: this epoch's window order (from epoch_seed)
  std::vector<StepRecord> history_;
};

}  // namespace squeeze::train
