// train/optimizer.cpp — see optimizer.h.
#include "train/optimizer.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace squeeze::train {

AdamW::AdamW(const GlimmerModel& model, AdamWParams params) : AdamW(model.params(), params) {}

AdamW::AdamW(const std::vector<Parameter>& params, AdamWParams p) : p_(p) {
  for (const Parameter& q : params) {
    m_.emplace_back(static_cast<size_t>(q.size()), 0.0f);
    v_.emplace_back(static_cast<size_t>(q.size()), 0.0f);
  }
}

void AdamW::step(GlimmerModel& model, float lr) { step(model.params(), lr); }

void AdamW::step(std::vector<Parameter>& params, float lr) {
  SQZ_CHECK(params.size() == m_.size(), "AdamW: the model has ", params.size(), " parameters, the optimiser ", m_.size());
  ++t_;
  const double bc1 = 1.0 - std::pow(static_cast<double>(p_.beta1), static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(static_cast<double>(p_.beta2), static_cast<double>(t_));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter& p = params[i];
    const float wd = p.is_norm() ? 0.0f : p_.weight_decay;
    float *w = p.value.data(), *m = m_[i].data(), *v = v_[i].data();
    const float* g = p.grad.data();
    for (int64_t j = 0; j < p.size(); ++j) {
      m[j] = p_.beta1 * m[j] + (1.0f - p_.beta1) * g[j];
      v[j] = p_.beta2 * v[j] + (1.0f - p_.beta2) * g[j] * g[j];
      w[j] -= step_size * m[j] / (std::sqrt(v[j]) * inv_sqrt_bc2 + p_.eps) + lr * wd * w[j];
    }
  }
}

float learning_rate(const ScheduleParams& p, int64_t step) {
  SQZ_CHECK(p.total > 0 && p.warmup >= 0 && p.lr > 0 && p.min_lr >= 0, "learning-rate schedule: bad parameters");
  if (step < p.warmup) return p.lr * static_cast<float>(step + 1) / static_cast<float>(p.warmup);
  const int64_t span = std::max<int64_t>(1, p.total - 1 - p.warmup);
  const double progress = std::min(1.0, static_cast<double>(step - p.warmup) / static_cast<double>(span));
  return p.min_lr + 0.5f * (p.lr - p.min_lr) * static_cast<float>(1.0 + std::cos(std::numbers::pi * progress));
}

double clip_grad_norm(GlimmerModel& model, double max_norm) { return clip_grad_norm(model.params(), max_norm); }

double clip_grad_norm(std::vector<Parameter>& params, double max_norm) {
  double ss = 0;
  for (const Parameter& p : params)
    for (float g : p.grad) ss += static_cast<double>(g) * g;
  const double norm = std::sqrt(ss);
  if (max_norm > 0 && norm > max_norm) {
    const float s = static_cast<float>(max_norm / (norm + 1e-12));
    for (Parameter& p : params)
      for (float& g : p.grad) g *= s;
  }
  return norm;
}

}  // namespace squeeze::train
