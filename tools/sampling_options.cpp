// tools/sampling_options.cpp — the sampling options of generate and chat.
#include "sampling_options.h"

#include <cstdio>
#include <limits>

namespace squeeze::cli {

void add_sampling_options(Args& args) {
  args.group("sampling")
      .real_option({"--temp"}, "T", "temperature (0: greedy)", {.min = 0}, "0.8")
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

}  // namespace squeeze::cli
