// text/sampler.h — next-token sampling: penalties, top-k, top-p, min-p, temperature.
//
// Order (llama.cpp's default chain, so settings mean the same as there):
//   1. penalties on the raw logits over the last `penalty_last_n` accepted tokens:
//      repetition (CTRL-style: positive logits divided by the penalty, negative ones
//      multiplied, once per distinct token), then frequency (× count) and presence
//      (once) subtracted;
//   2. temperature <= 0: greedy (argmax; lowest id on ties) — nothing else applies;
//   3. top-k, then top-p on the renormalised top-k probabilities (smallest prefix of
//      the sorted tokens whose mass reaches p, at least one token), then min-p (tokens
//      with p >= min_p · p_max) — all computed at temperature 1;
//   4. temperature scales the surviving logits; softmax; one draw with our own PRNG.
// NaN or +inf logits are errors; -inf means "never"; all -inf is an error.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "text/rng.h"

namespace squeeze::text {

struct SamplerParams {
  float temperature = 0.8f;       // <= 0: greedy
  int32_t top_k = 40;             // <= 0 (or >= vocabulary): off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off
  float repeat_penalty = 1.0f;    // 1: off; must be > 0
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int32_t penalty_last_n = 64;    // history length for penalties; 0: off, -1: all
  uint64_t seed = 0;
};

struct Candidate {
  int32_t id;
  double p;
};

class Sampler {
 public:
  // Validates the parameters (errors name the field).
  explicit Sampler(const SamplerParams& params);

  // Draws the next token from logits (one per vocabulary entry). Does not record it:
  // call accept() with the token actually appended (it may differ, e.g. when forced).
  int32_t sample(std::span<const float> logits);
  // The distribution sample() draws from: surviving tokens, most probable first,
  // probabilities summing to 1 (speculative decoding needs it for rejection sampling).
  std::vector<Candidate> distribution(std::span<const float> logits);

  void accept(int32_t token);
  void reset();  // clears the history and reseeds
  const SamplerParams& params() const { return params_; }

 private:
  void apply_penalties(std::vector<float>& logits) const;

  SamplerParams params_;
  Rng rng_;
  std::vector<int32_t> history_;  // the last penalty_last_n accepted tokens (or all)
  std::vector<float> scratch_;
};

}  // namespace squeeze::text
