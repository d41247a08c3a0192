// quant/scale_search.cpp — scale/min searches for the reference quantizers.
#include "quant/scale_search.h"

#include <algorithm>
#include <cmath>

namespace squeeze::quant {

int nearest_int(float v) { return static_cast<int>(std::nearbyint(v)); }

bool importance_weights(int n, const float* x, const float* importance, float* w) {
  if (!importance) return false;
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float sigma2 = static_cast<float>(ss / n);
  for (int i = 0; i < n; ++i) w[i] = std::max(importance[i], 0.0f) * std::sqrt(sigma2 + x[i] * x[i]);
  return true;
}

float search_symmetric(int n, const float* x, const float* w, int qmin, int qmax, int8_t* q) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), vmax = x[i];
  if (!(amax > 1e-30f) || !std::isfinite(amax)) {
    std::fill(q, q + n, int8_t{0});
    return 0.0f;
  }
  // The extreme value goes to the longer side of the code range.
  const float reach = static_cast<float>(-qmin);
  float best_d = 0, best_score = -1;
  for (int k = -kSearchSteps; k <= kSearchSteps; ++k) {
    const float iscale = -(reach + kSearchStep * k) / vmax;
    double sxq = 0, sqq = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), qmin, qmax);
      const double wi = w ? w[i] : 1.0;
      sxq += wi * x[i] * l;
      sqq += wi * l * l;
    }
    if (sqq <= 0) continue;
    // Error of the least-squares d is sum(w x^2) - sxq^2/sqq: maximise sxq^2/sqq.
    const double score = sxq * sxq / sqq;
    if (score > best_score) best_score = score, best_d = static_cast<float>(sxq / sqq);
  }
  if (best_d == 0) best_d = vmax / static_cast<float>(qmin);
  const float id = 1.0f / best_d;
  for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::clamp(nearest_int(id * x[i]), qmin, qmax));
  return best_d;
}

float search_affine(int n, const float* x, const float* w, int qmax, float* m_out, uint8_t* q, AffineMin mins) {
  const bool non_negative = mins == AffineMin::non_negative;
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (non_negative) lo = std::min(lo, 0.0f);  // the min term can only lower values
  if (!(hi - lo > 1e-30f) || !std::isfinite(hi - lo)) {
    std::fill(q, q + n, uint8_t{0});
    *m_out = -lo;
    return 0.0f;
  }
  float best_s = (hi - lo) / qmax, best_b = lo;
  double best_err = INFINITY;
  uint8_t l[256];
  for (int k = -kSearchSteps; k <= kSearchSteps; ++k) {
    const float iscale = (qmax + kSearchStep * k) / (hi - lo);
    double sw = 0, sq = 0, sqq = 0, sx = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      l[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - lo)), 0, qmax));
      const double wi = w ? w[i] : 1.0;
      sw += wi, sq += wi * l[i], sqq += wi * l[i] * l[i], sx += wi * x[i], sqx += wi * l[i] * x[i];
    }
    // Weighted least squares for x ≈ s·l + b, then b ≤ 0 enforced if asked (b = −m).
    const double det = sw * sqq - sq * sq;
    if (det <= 0) continue;
    double s = (sw * sqx - sq * sx) / det, b = (sqq * sx - sq * sqx) / det;
    if (non_negative && b > 0) b = 0, s = sqx / sqq;
    if (!(s > 0)) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = s * l[i] + b - x[i];
      err += (w ? w[i] : 1.0) * e * e;
    }
    if (err < best_err) best_err = err, best_s = static_cast<float>(s), best_b = static_cast<float>(b);
  }
  const float is = 1.0f / best_s;
  for (int i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(std::clamp(nearest_int((x[i] - best_b) * is), 0, qmax));
  *m_out = -best_b;
  return best_s;
}

}  // namespace squeeze::quant
