// tools/generation.cpp — the sampling options and decode loop of generate and chat.
#include "generation.h"

#include <cmath>
#include <cstdio>

namespace squeeze::cli {

void add_sampling_options(Args& args) {
  args.real_option({"--temp"}, "T", "temperature (0: greedy)", {.min = 0}, "0.8")
      .int_option({"--top-k"}, "K", "top-k (0: off)", {0, std::numeric_limits<int32_t>::max()}, "40")
      .real_option({"--top-p"}, "P", "top-p (1: off)", {.min = 0, .max = 1, .min_open = true}, "0.95")
      .real_option({"--min-p"}, "P", "min-p (0: off)", {.min = 0, .max = 1}, "0.05")
      .real_option({"--repeat-penalty"}, "X", "repetition penalty (1: off)", {.min = 0, .min_open = true}, "1.0")
      .int_option({"--seed"}, "N", "sampling seed", {0, kMaxSeed}, "0");
}

text::SamplerParams sampler_params(const Args& args) {
  return {.temperature = static_cast<float>(args.get_double("--temp")),
          .top_k = args.get_int32("--top-k"),
          .top_p = static_cast<float>(args.get_double("--top-p")),
          .min_p = static_cast<float>(args.get_double("--min-p")),
          .repeat_penalty = static_cast<float>(args.get_double("--repeat-penalty")),
          .seed = static_cast<uint64_t>(args.get_int("--seed"))};
}

void emit_stdout(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

DecodeResult decode(model::Session& session, const text::Tokenizer& tok, text::Sampler& sampler,
                    text::StopChecker& checker, std::span<const float> logits, const DecodeParams& params,
                    const std::function<void(const std::string&)>& emit) {
  // Tokens marked unused in the vocabulary are never generated (padding of a vocabulary).
  std::vector<int32_t> banned;
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.token_type(id) == text::TokenType::unused) banned.push_back(id);
  std::vector<float> masked;
  auto allowed = [&](std::span<const float> l) -> std::span<const float> {
    if (banned.empty()) return l;
    masked.assign(l.begin(), l.end());
    for (int32_t id : banned) masked[static_cast<size_t>(id)] = -INFINITY;
    return masked;
  };

  DecodeResult r;
  while (r.generated < params.n_predict) {
    if (params.interrupt && params.interrupt->load()) {
      r.interrupted = true;
      break;
    }
    const int32_t next = sampler.sample(allowed(logits));
    sampler.accept(next);
    ++r.generated;
    const auto step = checker.push(next, tok.token_to_piece(next, {.render_control = false}));
    emit(step.text);
    if (step.stopped()) break;
    // `next` came from the logits of the last cached position; it can be run only while
    // the cache has room, so generation ends with the context exactly full (n_ctx
    // positions cached, plus this last token sampled from them).
    if (session.position() >= session.n_ctx()) {
      r.context_full = true;
      break;
    }
    logits = session.forward(std::span<const int32_t>(&next, 1));
    if (params.forwarded) params.forwarded->push_back(next);
  }
  if (checker.reason() == text::StopReason::none) emit(checker.finish());
  return r;
}

}  // namespace squeeze::cli
