// train/on_policy.cpp — see on_policy.h.
#include "train/on_policy.h"

#include <cmath>

#include "core/error.h"
#include "model/model.h"
#include "model/rollout.h"
#include "model/session.h"
#include "text/sampler.h"

namespace squeeze::train {

BatchFn on_policy_batches(const GlimmerModel& student, std::span<const int32_t> prompts, const OnPolicyParams& p,
                          int64_t batch, int64_t seq_len) {
  SQZ_CHECK(p.prompt_len >= 1 && p.prompt_len < seq_len, "on-policy: the prompt length ", p.prompt_len,
            " must be in [1, seq_len ", seq_len, ")");
  SQZ_CHECK(static_cast<int64_t>(prompts.size()) > p.prompt_len, "on-policy: the prompt stream has ", prompts.size(),
            " tokens, not more than one prompt of ", p.prompt_len);
  SQZ_CHECK(std::isfinite(p.temperature) && p.temperature > 0, "on-policy: the sampling temperature must be positive");
  SQZ_CHECK(!p.scratch_path.empty(), "on-policy: no scratch path for the sampler's weights");
  return [&student, prompts, p, batch, seq_len](TrainState& state, std::vector<int32_t>& inputs,
                                                std::vector<int32_t>& targets) {
    // The inference engine samples from the weights as they are now: one GGUF per batch
    // (a few milliseconds against the seconds of generation).
    student.export_gguf(p.scratch_path, "on-policy sampler");
    const auto model = model::Model::load(p.scratch_path);
    model::Session session(*model, {.n_ctx = seq_len, .batch = p.prompt_len});
    inputs.assign(static_cast<size_t>(batch * seq_len), 0);
    targets.assign(inputs.size(), -1);
    const uint64_t span = prompts.size() - static_cast<uint64_t>(p.prompt_len);
    for (int64_t b = 0; b < batch; ++b) {
      const auto prompt = prompts.subspan(next_random(state) % span, static_cast<size_t>(p.prompt_len));
      text::Sampler sampler({.temperature = p.temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
                             .penalty_last_n = 0, .seed = next_random(state)});
      const std::vector<int32_t> seq = model::sample_continuation(session, sampler, prompt, seq_len - p.prompt_len + 1);
      for (int64_t s = 0; s < seq_len; ++s) {
        inputs[static_cast<size_t>(b * seq_len + s)] = seq[static_cast<size_t>(s)];
        if (s >= p.prompt_len - 1) targets[static_cast<size_t>(b * seq_len + s)] = seq[static_cast<size_t>(s + 1)];
      }
    }
  };
}

}  // namespace squeeze::train
