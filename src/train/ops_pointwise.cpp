// train/ops_pointwise.cpp — elementwise ops of Muse Glimmer's forward: the sigmoid gate on
// the attention output and the tanh soft-cap of the logits. Each computes its forward with
// the expression model/forward.cpp uses, so float training matches inference.
#include <cmath>

#include "train/ops.h"
#include "train/ops_rows.h"

namespace squeeze::train {

template <typename T>
Var sigmoid_gate(Tape<T>& t, Var x, Var gate) {
  detail::check_same(t, x, gate, "sigmoid_gate");
  const int64_t m = t.size(x);
  Var y = t.output(t.rows(x), t.cols(x), t.needs_grad(x) || t.needs_grad(gate));
  const T *px = t.value(x), *pg = t.value(gate);
  T* py = t.value(y);
  for (int64_t i = 0; i < m; ++i) py[i] = px[i] * (T(1) / (T(1) + std::exp(-pg[i])));
  if (t.needs_grad(y)) {
    t.on_backward([&t, x, gate, y, m] {
      const T *px = t.value(x), *pg = t.value(gate), *gy = t.grad(y);
      T *gx = t.grad(x), *gg = t.grad(gate);
      for (int64_t i = 0; i < m; ++i) {
        const T s = T(1) / (T(1) + std::exp(-pg[i]));
        if (gx) gx[i] += gy[i] * s;
        if (gg) gg[i] += gy[i] * px[i] * s * (T(1) - s);  // σ' = σ(1 − σ)
      }
    });
  }
  return y;
}

template <typename T>
Var softcap(Tape<T>& t, Var x, float cap) {
  SQZ_CHECK(cap > 0 && std::isfinite(cap), "softcap: the cap must be positive and finite, got ", cap);
  const T c = static_cast<T>(cap);
  Var y = t.output(t.rows(x), t.cols(x), t.needs_grad(x));
  const T* px = t.value(x);
  T* py = t.value(y);
  detail::for_rows(t.pool(), t.rows(x), t.cols(x), [&](int64_t r) {
    for (int64_t i = r * t.cols(x); i < (r + 1) * t.cols(x); ++i) py[i] = c * std::tanh(px[i] / c);
  });
  if (t.needs_grad(y)) {
    // d/dx cap·tanh(x/cap) = 1 − tanh²(x/cap), with tanh recomputed rather than taken from
    // y/cap: near saturation 1 − th² is small and y's rounding would dominate it.
    t.on_backward([&t, x, y, c] {
      const T *px = t.value(x), *gy = t.grad(y);
      T* gx = t.grad(x);
      const int64_t V = t.cols(x);
      detail::for_rows(t.pool(), t.rows(x), V, [&](int64_t r) {
        for (int64_t i = r * V; i < (r + 1) * V; ++i) {
          const T th = std::tanh(px[i] / c);
          gx[i] += gy[i] * (T(1) - th * th);
        }
      });
    });
  }
  return y;
}

#define SQZ_TRAIN_INSTANTIATE(T)                          \
  template Var sigmoid_gate<T>(Tape<T>&, Var, Var);       \
  template Var softcap<T>(Tape<T>&, Var, float);
SQZ_TRAIN_INSTANTIATE(float)
SQZ_TRAIN_INSTANTIATE(double)
#undef SQZ_TRAIN_INSTANTIATE

}  // namespace squeeze::train
