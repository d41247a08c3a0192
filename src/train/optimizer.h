// train/optimizer.h — AdamW with decoupled weight decay, the warm-up + cosine learning
// rate schedule, and global-norm gradient clipping.
#pragma once

#include <cstdint>
#include <vector>

#include "train/glimmer_model.h"

namespace squeeze::train {

struct AdamWParams {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;  // decoupled (Loshchilov & Hutter); not applied to norm weights
};

// Per-parameter first and second moments, in the model's parameter order.
class AdamW {
 public:
  AdamW(const GlimmerModel& model, AdamWParams params);
  // Any list of parameters (the DFlash drafter's).
  AdamW(const std::vector<Parameter>& params, AdamWParams params_);
  void step(std::vector<Parameter>& params, float lr);
  // One update with learning rate lr from the gradients in model.params():
  //   m ← β1 m + (1−β1) g;  v ← β2 v + (1−β2) g²;  m̂ = m/(1−β1ᵗ);  v̂ = v/(1−β2ᵗ)
  //   w ← w − lr (m̂ / (sqrt(v̂) + eps) + wd · w)
  void step(GlimmerModel& model, float lr);

  int64_t steps_taken() const { return t_; }
  std::vector<std::vector<float>>& first_moments() { return m_; }
  std::vector<std::vector<float>>& second_moments() { return v_; }
  void set_steps_taken(int64_t t) { t_ = t; }

 private:
  AdamWParams p_;
  int64_t t_ = 0;
  std::vector<std::vector<float>> m_, v_;
};

struct ScheduleParams {
  float lr = 1e-3f;        // peak
  float min_lr = 1e-4f;    // floor at the end of the cosine
  int64_t warmup = 0;      // steps of linear warm-up from lr/warmup to lr
  int64_t total = 1;       // steps of the whole run
};
// Learning rate for optimiser step `step` (0-based): linear warm-up, then a cosine decay
// from lr to min_lr at step total - 1.
float learning_rate(const ScheduleParams& p, int64_t step);

// Scales every gradient so that their global L2 norm is at most max_norm (no-op when
// max_norm <= 0 or the norm is smaller). Returns the norm before clipping.
double clip_grad_norm(GlimmerModel& model, double max_norm);
double clip_grad_norm(std::vector<Parameter>& params, double max_norm);

}  // namespace squeeze::train
