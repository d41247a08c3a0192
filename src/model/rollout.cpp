// model/rollout.cpp — see rollout.h.
#include "model/rollout.h"

#include "core/error.h"

namespace squeeze::model {

std::vector<int32_t> sample_continuation(Session& session, text::Sampler& sampler, std::span<const int32_t> prompt,
                                         int64_t n) {
  SQZ_CHECK(!prompt.empty() && n >= 0, "sample_continuation: empty prompt or negative length");
  SQZ_CHECK(static_cast<int64_t>(prompt.size()) + n - 1 <= session.n_ctx(), "sample_continuation: ", prompt.size(),
            " + ", n, " tokens do not fit a context of ", session.n_ctx());
  std::vector<int32_t> seq(prompt.begin(), prompt.end());
  session.reset();
  std::span<const float> logits = session.forward(prompt);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t next = sampler.sample(logits);
    sampler.accept(next);
    seq.push_back(next);
    if (i + 1 < n) logits = session.forward(std::span<const int32_t>(&next, 1));
  }
  return seq;
}

}  // namespace squeeze::model
