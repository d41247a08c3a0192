// train/distill.cpp — see distill.h.
#include "train/distill.h"

#include <cmath>

#include "core/error.h"

namespace squeeze::train {

LossFn distillation_loss(GlimmerModel& teacher, const DistillParams& dp) {
  KlParams kl = dp.kl;
  SQZ_CHECK(std::isfinite(kl.temperature) && kl.temperature > 0, "distillation: temperature must be positive");
  SQZ_CHECK(dp.topk >= 0 && dp.topk <= teacher.config().n_vocab, "distillation: top-k ", dp.topk,
            " outside [0, ", teacher.config().n_vocab, "]");
  if (kl.scale == 0) kl.scale = kl.temperature * kl.temperature;
  return [&teacher, kl, topk = dp.topk](Tape<float>& t, Var logits, std::span<const int32_t> inputs,
                                        std::span<const int32_t> targets, int64_t seq_len) {
    SQZ_CHECK(t.cols(logits) == teacher.config().n_vocab, "distillation: the student's vocabulary (", t.cols(logits),
              ") differs from the teacher's (", teacher.config().n_vocab, ")");
    Tape<float> tt(&t.pool());
    const Var tl = teacher.forward(tt, inputs, seq_len, /*with_grad=*/false);
    const std::span<const float> teacher_logits(tt.value(tl), static_cast<size_t>(tt.size(tl)));
    if (topk > 0) {
      const TopKTeacher sparse = topk_teacher(teacher_logits, tt.rows(tl), tt.cols(tl), topk, kl.temperature);
      return kl_divergence_topk(t, logits, sparse, kl, targets);
    }
    return kl_divergence(t, logits, teacher_logits, kl, targets);
  };
}

}  // namespace squeeze::train
