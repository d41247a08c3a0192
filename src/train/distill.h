// train/distill.h — logit distillation objectives for the Trainer: the student learns
// the frozen teacher's whole next-token distribution on the same inputs (KL at a
// temperature, full vocabulary or the teacher's top-k; SPEC.md §2.6).
#pragma once

#include "train/glimmer_model.h"
#include "train/ops.h"
#include "train/trainer.h"

namespace squeeze::train {

struct DistillParams {
  KlParams kl = {};   // direction, temperature; scale 0 means τ² (Hinton)
  int64_t topk = 0;   // > 0: the teacher's top-k log-probs only (tail as one event, ops.h)
};

// A LossFn that runs `teacher` (frozen, same vocabulary as the student) on each
// micro-batch's inputs and returns the KL between its and the student's distributions.
// The teacher must outlive the returned function.
LossFn distillation_loss(GlimmerModel& teacher, const DistillParams& params);

}  // namespace squeeze::train
