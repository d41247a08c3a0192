// train/on_policy.h — the batches of on-policy distillation (GKD): the
// student itself continues prompts drawn from a prompt stream, sampling at a temperature,
// and the training sequence is prompt + continuation with only the continuation scored.
// The loss (distillation_loss with reverse KL) then asks the teacher about exactly the
// states the student reached, its own mistakes included.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "train/glimmer_model.h"
#include "train/trainer.h"

namespace squeeze::train {

struct OnPolicyParams {
  int64_t prompt_len = 32;        // prompt tokens; the rest of seq_len is generated
  float temperature = 1.0f;       // the student's sampling temperature (1: its own distribution)
  // The sampler runs the inference engine on the student's current weights, written here
  // (an F32 GGUF, replaced at every micro-batch and removed by the caller at the end).
  std::string scratch_path;
};

// A BatchFn for `batch` sequences of `seq_len` tokens: each takes prompt_len tokens at a
// random position of `prompts` and lets the student generate seq_len - prompt_len + 1
// more. Targets are -1 over the prompt, the generated tokens after it. `student` and
// `prompts` must outlive the function.
BatchFn on_policy_batches(const GlimmerModel& student, std::span<const int32_t> prompts, const OnPolicyParams& p,
                          int64_t batch, int64_t seq_len);

}  // namespace squeeze::train
