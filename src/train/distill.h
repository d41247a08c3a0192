// train/distill.h — logit distillation objectives for the Trainer: the student learns
// the frozen teacher's whole next-token distribution on the same inputs (KL at a
// temperature, full vocabulary or the teacher's top-k).
#pragma once

#include "train/glimmer_model.h"
#include "train/ops.h"
#include "train/trainer.h"

namespace squeeze::train {

class TeacherTopKCache;

struct DistillParams {
  KlParams kl = {};   // direction, temperature; scale 0 means τ² (Hinton)
  int64_t topk = 0;   // > 0: the teacher's top-k log-probs only (tail as one event, ops.h)
  // Top-k only: read the teacher's top-k of each window from here, running the teacher
  // only on the windows it lacks (and storing them). Must match topk, temperature, the
  // sequence length and the teacher (teacher_cache.h).
  TeacherTopKCache* cache = nullptr;
  // α of the classic mix (1 − α)·KL + α·cross-entropy on the data's next tokens. The
  // hard labels pin down what a top-k teacher leaves free: how the student spreads the
  // tail mass over the tokens outside the top k.
  double hard_label_weight = 0;
};

// A LossFn that runs `teacher` (frozen, same vocabulary as the student) on each
// micro-batch's inputs and returns the KL between its and the student's distributions.
// The teacher (and the cache) must outlive the returned function.
LossFn distillation_loss(GlimmerModel& teacher, const DistillParams& params);

}  // namespace squeeze::train
