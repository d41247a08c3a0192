// eval/sampled_kl.h — how far a model is from a reference on the model's *own* text:
// the model continues prompts by sampling, and at every generated position the per-token
// reverse KL(model ‖ reference) is measured (the quantity on-policy distillation
// minimises), with the reference's negative log-likelihood of the samples.
#pragma once

#include <cstdint>
#include <span>

#include "model/model.h"

namespace squeeze::eval {

struct SampledKlParams {
  int64_t sequences = 64;     // prompts, evenly spaced over the prompt stream
  int64_t prompt_len = 32;
  int64_t gen_len = 32;       // sampled tokens per prompt
  float temperature = 1.0f;   // the model's sampling temperature
  uint64_t seed = 1;
};

struct SampledKl {
  int64_t tokens = 0;         // generated positions scored
  double reverse_kl = 0;      // mean KL(model ‖ reference) per generated token, nats
  double reference_nll = 0;   // mean −log p_reference(sampled token)
  double model_nll = 0;       // mean −log p_model(sampled token)
};

SampledKl sampled_kl(const model::Model& model, const model::Model& reference, std::span<const int32_t> prompts,
                     const SampledKlParams& p);

}  // namespace squeeze::eval
