// kernels/cpu/rope_tables.h — the RoPE angle for pair i, shared by every variant so
// that all compute the same cos/sin (the rotation itself is what SIMD speeds up).
#pragma once

#include <cmath>

#include "kernels/cpu/ops.h"

namespace squeeze::kernels::cpu {

// theta_i = pos * scale * base^(-2i / rot_dim) / factor_i, computed in double so that large
// positions (128K) keep their precision.
inline void rope_angle(const RopeParams& p, int64_t i, int64_t rot_dim, float* c, float* s) {
  double theta = static_cast<double>(p.position) * p.freq_scale *
                 std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(i) / static_cast<double>(rot_dim));
  if (p.freq_factors) theta /= static_cast<double>(p.freq_factors[i]);
  *c = static_cast<float>(std::cos(theta));
  *s = static_cast<float>(std::sin(theta));
}

}  // namespace squeeze::kernels::cpu
