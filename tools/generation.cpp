// tools/generation.cpp — the sampling options and decode loop of generate and chat.
#include "generation.h"

#include <cstdio>

#include "core/error.h"

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

DecodeResult decode(model::Session& session, generate::Sequence& seq, std::span<const float> logits,
                    const DecodeParams& params, const std::function<void(const std::string&)>& emit) {
  SQZ_CHECK(seq.position() == session.position(), "decode: the sequence is out of step with its session");
  DecodeResult r;
  model::Speculator* const spec = params.speculator;
  std::vector<int32_t> run, drafts;
  if (!seq.finished()) emit(seq.advance(logits, {}).text);
  while (!seq.finished()) {
    if (params.interrupt && params.interrupt->load()) {
      r.interrupted = true;
      break;
    }
    run = seq.feed();
    drafts.clear();
    std::span<const float> rows;
    const bool verifying = spec && run.size() == 1;
    if (verifying) {
      drafts = spec->draft(run[0], seq.draft_room());
      rows = spec->verify(run[0], drafts);
    } else {
      rows = spec ? spec->prefill(run) : session.forward(run);
    }
    const generate::Sequence::Step step = seq.advance(rows, drafts);
    if (verifying) spec->commit(step.keep);
    if (params.forwarded) {
      run.insert(run.end(), drafts.begin(), drafts.end());
      params.forwarded->insert(params.forwarded->end(), run.begin(), run.begin() + step.keep);
    }
    if (step.take_back > 0) {  // a forced close: the unfinished word leaves the cache
      const int64_t pos = session.position() - step.take_back;
      if (spec) SQZ_CHECK(spec->rewind(pos), "thinking budget: cannot take ", step.take_back, " tokens back");
      else session.truncate(pos);
      if (params.forwarded) params.forwarded->resize(params.forwarded->size() - static_cast<size_t>(step.take_back));
    }
    emit(step.text);
  }
  emit(seq.flush());
  r.generated = seq.n_tokens();
  r.context_full = seq.finish_reason() == generate::Finish::context_full;
  return r;
}

}  // namespace squeeze::cli
