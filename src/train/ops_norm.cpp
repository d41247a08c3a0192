// train/ops_norm.cpp — RMSNorm in its three forms (per row with a weight, per row without
// one, per head with a weight shared by the heads), all one kernel: normalise each group of
// D consecutive values of the row-major input, then scale by the weight if there is one.
#include <cmath>
#include <memory>

#include "train/ops.h"
#include "train/ops_rows.h"

namespace squeeze::train {

namespace {

// y = x / sqrt(mean over the group(x²) + eps) · w, over groups of D = size(w) values (or
// D = `group` without a weight: `w` has id -1). Products in the order of kernels/cpu's
// rmsnorm (x · r, then · w), so that float training matches inference bit for bit in
// this step.
template <typename T>
Var rmsnorm_groups(Tape<T>& t, Var x, Var w, int64_t D, float eps, const char* op) {
  const bool weighted = w.id >= 0;
  SQZ_CHECK(D > 0 && t.cols(x) % D == 0, op, ": rows of ", t.cols(x), " values are not groups of ", D);
  const int64_t groups = t.size(x) / D;
  Var y = t.output(t.rows(x), t.cols(x), t.needs_grad(x) || (weighted && t.needs_grad(w)));
  // r[g] = 1 / sqrt(mean(x_g²) + eps), kept for backward.
  auto r = std::make_shared<std::vector<T>>(static_cast<size_t>(groups));
  const T* px = t.value(x);
  const T* pw = weighted ? t.value(w) : nullptr;
  T* py = t.value(y);
  detail::for_rows(t.pool(), groups, D, [&](int64_t g) {
    const T* xg = px + g * D;
    T ss = 0;
    for (int64_t j = 0; j < D; ++j) ss += xg[j] * xg[j];
    const T rg = T(1) / std::sqrt(ss / static_cast<T>(D) + static_cast<T>(eps));
    (*r)[static_cast<size_t>(g)] = rg;
    for (int64_t j = 0; j < D; ++j) py[g * D + j] = pw ? xg[j] * rg * pw[j] : xg[j] * rg;
  });
  if (!t.needs_grad(y)) return y;
  t.on_backward([&t, x, w, y, r, groups, D, weighted] {
    const T *px = t.value(x), *gy = t.grad(y);
    const T* pw = weighted ? t.value(w) : nullptr;
    auto weight = [pw](int64_t j) { return pw ? pw[j] : T(1); };
    if (T* gx = t.grad(x)) {
      // dx_j = r·w_j·dy_j − x_j · r³/D · Σ_k dy_k w_k x_k
      detail::for_rows(t.pool(), groups, D, [&](int64_t g) {
        const T *xg = px + g * D, *dg = gy + g * D;
        const T rg = (*r)[static_cast<size_t>(g)];
        T dot = 0;
        for (int64_t j = 0; j < D; ++j) dot += dg[j] * weight(j) * xg[j];
        const T c = dot * rg * rg * rg / static_cast<T>(D);
        for (int64_t j = 0; j < D; ++j) gx[g * D + j] += rg * weight(j) * dg[j] - xg[j] * c;
      });
    }
    if (T* gw = weighted ? t.grad(w) : nullptr) {
      // Serial over the groups: every group adds into the same D weights.
      for (int64_t g = 0; g < groups; ++g) {
        const T rg = (*r)[static_cast<size_t>(g)];
        for (int64_t j = 0; j < D; ++j) gw[j] += gy[g * D + j] * px[g * D + j] * rg;
      }
    }
  });
  return y;
}

}  // namespace

template <typename T>
Var rmsnorm(Tape<T>& t, Var x, Var w, float eps) {
  SQZ_CHECK(t.size(w) == t.cols(x), "rmsnorm: weight has ", t.size(w), " values for rows of ", t.cols(x));
  return rmsnorm_groups(t, x, w, t.cols(x), eps, "rmsnorm");
}

template <typename T>
Var rmsnorm_unweighted(Tape<T>& t, Var x, float eps) {
  return rmsnorm_groups(t, x, Var{}, t.cols(x), eps, "rmsnorm_unweighted");
}

template <typename T>
Var rmsnorm_heads(Tape<T>& t, Var x, Var w, float eps) {
  return rmsnorm_groups(t, x, w, t.size(w), eps, "rmsnorm_heads");
}

#define SQZ_TRAIN_INSTANTIATE(T)                                      \
  template Var rmsnorm<T>(Tape<T>&, Var, Var, float);                 \
  template Var rmsnorm_unweighted<T>(Tape<T>&, Var, float);           \
  template Var rmsnorm_heads<T>(Tape<T>&, Var, Var, float);
SQZ_TRAIN_INSTANTIATE(float)
SQZ_TRAIN_INSTANTIATE(double)
#undef SQZ_TRAIN_INSTANTIATE

}  // namespace squeeze::train
