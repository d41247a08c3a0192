// eval/sampled_kl.cpp — see sampled_kl.h.
#include "eval/sampled_kl.h"

#include <cmath>

#include "core/error.h"
#include "eval/log_probs.h"
#include "model/rollout.h"
#include "model/session.h"

namespace squeeze::eval {

SampledKl sampled_kl(const model::Model& model, const model::Model& reference, std::span<const int32_t> prompts,
                     const SampledKlParams& p) {
  SQZ_CHECK(p.sequences > 0 && p.prompt_len > 0 && p.gen_len > 0, "sampled KL: sequences, prompt and generated lengths must be positive");
  SQZ_CHECK(static_cast<int64_t>(prompts.size()) > p.prompt_len, "sampled KL: the text has ", prompts.size(),
            " tokens, not more than one prompt of ", p.prompt_len);
  SQZ_CHECK(model.config().n_vocab == reference.config().n_vocab, "sampled KL: the vocabularies differ (",
            model.config().n_vocab, " and ", reference.config().n_vocab, " tokens)");
  const int64_t len = p.prompt_len + p.gen_len - 1;  // positions run (the last sample is only scored)
  SQZ_CHECK(len <= model.config().n_ctx && len <= reference.config().n_ctx, "sampled KL: ", len,
            " positions exceed a model's context");
  model::Session ms(model, {.n_ctx = len, .batch = len}), rs(reference, {.n_ctx = len, .batch = len});
  text::Sampler sampler({.temperature = p.temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .penalty_last_n = 0,
                         .seed = p.seed});
  const int64_t V = model.config().n_vocab;
  const uint64_t span = prompts.size() - static_cast<uint64_t>(p.prompt_len);
  SampledKl out;
  std::vector<double> lm, lr;
  for (int64_t i = 0; i < p.sequences; ++i) {
    const uint64_t start = span * static_cast<uint64_t>(i) / static_cast<uint64_t>(p.sequences);
    const auto prompt = prompts.subspan(start, static_cast<size_t>(p.prompt_len));
    std::vector<int32_t> seq = model::sample_continuation(ms, sampler, prompt, p.gen_len);
    const int32_t* run = seq.data();
    ms.reset();
    rs.reset();
    const std::span<const float> mlog = ms.forward(std::span<const int32_t>(run, static_cast<size_t>(len)), true);
    const std::span<const float> rlog = rs.forward(std::span<const int32_t>(run, static_cast<size_t>(len)), true);
    for (int64_t j = 0; j < p.gen_len; ++j) {
      const size_t row = static_cast<size_t>(p.prompt_len - 1 + j);
      const int32_t tok = seq[row + 1];
      log_softmax(mlog.subspan(row * static_cast<size_t>(V), static_cast<size_t>(V)), lm);
      log_softmax(rlog.subspan(row * static_cast<size_t>(V), static_cast<size_t>(V)), lr);
      out.reverse_kl += kl_from_log_probs(lm, lr);
      out.model_nll -= lm[static_cast<size_t>(tok)];
      out.reference_nll -= lr[static_cast<size_t>(tok)];
      ++out.tokens;
    }
  }
  const double n = static_cast<double>(out.tokens);
  out.reverse_kl /= n;
  out.model_nll /= n;
  out.reference_nll /= n;
  return out;
}

}  // namespace squeeze::eval
