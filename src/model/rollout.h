// model/rollout.h — letting a model continue a prompt by sampling, the one loop shared by
// on-policy distillation (train/on_policy.h) and the evaluation of a model's own text
// (eval/on_policy_kl.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/session.h"
#include "text/sampler.h"

namespace squeeze::model {

// Resets `session`, runs `prompt` and appends `n` tokens drawn by `sampler` one at a
// time (the sampler keeps its random state and history across calls). Returns prompt +
// continuation. The session must hold prompt.size() + n - 1
// positions (the last token is never run).
std::vector<int32_t> sample_continuation(Session& session, text::Sampler& sampler, std::span<const int32_t> prompt,
                                         int64_t n);

}  // namespace squeeze::model
