// train/ops_attention.cpp — causal grouped-query attention with an optional sliding
// window, scores materialised per (sequence, head) and kept for the backward pass
// (training runs at short context, where the S² probabilities are small).
#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/cpu/ops.h"
#include "train/ops.h"
#include "train/ops_rows.h"

namespace squeeze::train {

using detail::head_axpy;
using detail::head_dot;

template <typename T>
Var attention(Tape<T>& t, Var q, Var k, Var v, const AttentionSpec& s) {
  const int64_t H = s.n_heads, Hk = s.n_kv_heads, D = s.head_dim, S = s.seq_len;
  SQZ_CHECK(H > 0 && Hk > 0 && H % Hk == 0 && D > 0 && S > 0 && s.window >= 0, "attention: bad spec (", H,
            " heads, ", Hk, " KV heads, head_dim ", D, ", seq_len ", S, ", window ", s.window, ")");
  const int64_t n = t.rows(q);
  SQZ_CHECK(t.cols(q) == H * D && t.cols(k) == Hk * D && t.cols(v) == Hk * D && t.rows(k) == n && t.rows(v) == n,
            "attention: q [", n, ", ", t.cols(q), "], k [", t.rows(k), ", ", t.cols(k), "], v [", t.rows(v), ", ",
            t.cols(v), "] do not fit ", H, " heads / ", Hk, " KV heads of ", D);
  SQZ_CHECK(n % S == 0, "attention: ", n, " rows are not whole sequences of ", S);
  const int64_t B = n / S, G = H / Hk, QW = H * D, KW = Hk * D;
  const T scale = s.scale > 0 ? static_cast<T>(s.scale) : T(1) / std::sqrt(static_cast<T>(D));
  auto lo = [w = s.window](int64_t i) { return w > 0 ? std::max<int64_t>(0, i - w + 1) : int64_t{0}; };
  // probs[b, h, i, j]: softmax row of query i (only j in [lo(i), i] is meaningful).
  auto probs = std::make_shared<std::vector<T>>(static_cast<size_t>(B * H * S * S), T(0));

  Var out = t.output(n, QW, t.needs_grad(q) || t.needs_grad(k) || t.needs_grad(v));
  const T *pq = t.value(q), *pk = t.value(k), *pv = t.value(v);
  T* po = t.value(out);
  t.pool().parallel_for(0, B * H, [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / H, h = task % H, g = h / G;
      for (int64_t i = 0; i < S; ++i) {
        const T* qi = pq + (b * S + i) * QW + h * D;
        T* p = probs->data() + ((b * H + h) * S + i) * S;
        T mx = -INFINITY;
        for (int64_t j = lo(i); j <= i; ++j) {
          const T* kj = pk + (b * S + j) * KW + g * D;
          p[j] = head_dot(qi, kj, D) * scale;
          mx = std::max(mx, p[j]);
        }
        T sum = 0;
        for (int64_t j = lo(i); j <= i; ++j) sum += (p[j] = std::exp(p[j] - mx));
        T* o = po + (b * S + i) * QW + h * D;
        for (int64_t j = lo(i); j <= i; ++j) {
          p[j] /= sum;
          head_axpy(p[j], pv + (b * S + j) * KW + g * D, o, D);
        }
      }
    }
  });

  if (t.needs_grad(out)) {
    t.on_backward([&t, q, k, v, out, probs, lo, B, S, H, G, D, QW, KW, Hk, scale] {
      const T *pq = t.value(q), *pk = t.value(k), *pv = t.value(v), *go = t.grad(out);
      T *gq = t.grad(q), *gk = t.grad(k), *gv = t.grad(v);
      // One task per (sequence, KV head): it owns that head's dk/dv rows and the dq rows
      // of the query heads in its group, so no two tasks write the same memory.
      t.pool().parallel_for(0, B * Hk, [&](int64_t t0, int64_t t1) {
        std::vector<T> ds(static_cast<size_t>(S));
        for (int64_t task = t0; task < t1; ++task) {
          const int64_t b = task / Hk, g = task % Hk;
          for (int64_t h = g * G; h < (g + 1) * G; ++h) {
            for (int64_t i = 0; i < S; ++i) {
              const T* p = probs->data() + ((b * H + h) * S + i) * S;
              const T* doi = go + (b * S + i) * QW + h * D;
              // dp_j = dO_i · v_j; ds_j = p_j (dp_j − Σ_l p_l dp_l)
              T pdp = 0;
              for (int64_t j = lo(i); j <= i; ++j) {
                const T dp = head_dot(doi, pv + (b * S + j) * KW + g * D, D);
                ds[static_cast<size_t>(j)] = dp;
                pdp += p[j] * dp;
              }
              const T* qi = pq + (b * S + i) * QW + h * D;
              for (int64_t j = lo(i); j <= i; ++j) {
                const T dsj = p[j] * (ds[static_cast<size_t>(j)] - pdp) * scale;
                const size_t kr = static_cast<size_t>((b * S + j) * KW + g * D);
                if (gq) head_axpy(dsj, pk + kr, gq + (b * S + i) * QW + h * D, D);
                if (gk) head_axpy(dsj, qi, gk + kr, D);
                if (gv) head_axpy(p[j], doi, gv + kr, D);
              }
            }
          }
        }
      });
    });
  }
  return out;
}

template Var attention<float>(Tape<float>&, Var, Var, Var, const AttentionSpec&);
template Var attention<double>(Tape<double>&, Var, Var, Var, const AttentionSpec&);

}  // namespace squeeze::train
