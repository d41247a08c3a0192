// eval/log_probs.h — log-softmax of one row of logits in double, so that scores and KL
// divergences do not depend on the float rounding order of the kernel that made them.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace squeeze::eval {

inline void log_softmax(std::span<const float> logits, std::vector<double>& out) {
  double mx = -INFINITY;
  for (float v : logits) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  const double lse = mx + std::log(sum);
  out.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - lse;
}

// KL(p ‖ q) of two log-probability rows of the same length.
inline double kl_from_log_probs(const std::vector<double>& lp, const std::vector<double>& lq) {
  double kl = 0;
  for (size_t v = 0; v < lp.size(); ++v) kl += std::exp(lp[v]) * (lp[v] - lq[v]);
  return kl;
}

}  // namespace squeeze::eval
