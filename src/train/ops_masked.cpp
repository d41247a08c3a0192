// train/ops_masked.cpp — the ops a DFlash drafter's training adds: attention over key rows
// chosen per query (the block mask), row concatenation (context keys then block keys), and
// the position-weighted cross-entropy.
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
Var masked_attention(Tape<T>& t, Var q, Var k, Var v, const MaskedAttentionSpec& s,
                     std::span<const std::array<int64_t, 4>> visible) {
  const int64_t H = s.n_heads, Hk = s.n_kv_heads, D = s.head_dim;
  SQZ_CHECK(H > 0 && Hk > 0 && H % Hk == 0 && D > 0, "masked attention: bad spec (", H, " heads, ", Hk,
            " KV heads, head_dim ", D, ")");
  const int64_t nq = t.rows(q), nk = t.rows(k);
  SQZ_CHECK(t.cols(q) == H * D && t.cols(k) == Hk * D && t.cols(v) == Hk * D && t.rows(v) == nk,
            "masked attention: q [", nq, ", ", t.cols(q), "], k [", nk, ", ", t.cols(k), "], v [", t.rows(v), ", ",
            t.cols(v), "] do not fit ", H, " heads / ", Hk, " KV heads of ", D);
  SQZ_CHECK(static_cast<int64_t>(visible.size()) == nq, "masked attention: ", visible.size(), " visibility rows for ",
            nq, " queries");
  // The visible keys of every query as one list (offsets per query), shared with backward.
  auto keys = std::make_shared<std::vector<int64_t>>();
  auto first = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(nq + 1), 0);
  for (int64_t i = 0; i < nq; ++i) {
    const auto& r = visible[static_cast<size_t>(i)];
    for (int part = 0; part < 2; ++part) {
      const int64_t lo = r[2 * part], hi = r[2 * part + 1];
      SQZ_CHECK(lo >= 0 && hi <= nk && lo <= hi, "masked attention: query ", i, " sees keys [", lo, ", ", hi,
                ") of ", nk);
      for (int64_t j = lo; j < hi; ++j) keys->push_back(j);
    }
    (*first)[static_cast<size_t>(i + 1)] = static_cast<int64_t>(keys->size());
    SQZ_CHECK((*first)[static_cast<size_t>(i + 1)] > (*first)[static_cast<size_t>(i)], "masked attention: query ", i,
              " sees no key");
  }
  const int64_t G = H / Hk, QW = H * D, KW = Hk * D, total = static_cast<int64_t>(keys->size());
  const T scale = s.scale > 0 ? static_cast<T>(s.scale) : T(1) / std::sqrt(static_cast<T>(D));
  // probs[h][slot]: the softmax weight of the slot-th visible key (in `keys`) for head h
  auto probs = std::make_shared<std::vector<T>>(static_cast<size_t>(H * total), T(0));

  Var out = t.output(nq, QW, t.needs_grad(q) || t.needs_grad(k) || t.needs_grad(v));
  const T *pq = t.value(q), *pk = t.value(k), *pv = t.value(v);
  T* po = t.value(out);
  t.pool().parallel_for(0, nq * H, [&](int64_t t0, int64_t t1) {
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task / H, h = task % H, g = h / G;
      const int64_t f0 = (*first)[static_cast<size_t>(i)], f1 = (*first)[static_cast<size_t>(i + 1)];
      const T* qi = pq + i * QW + h * D;
      T* p = probs->data() + h * total;
      T mx = -INFINITY;
      for (int64_t f = f0; f < f1; ++f) {
        p[f] = head_dot(qi, pk + (*keys)[static_cast<size_t>(f)] * KW + g * D, D) * scale;
        mx = std::max(mx, p[f]);
      }
      T sum = 0;
      for (int64_t f = f0; f < f1; ++f) sum += (p[f] = std::exp(p[f] - mx));
      T* o = po + i * QW + h * D;
      for (int64_t f = f0; f < f1; ++f) {
        p[f] /= sum;
        head_axpy(p[f], pv + (*keys)[static_cast<size_t>(f)] * KW + g * D, o, D);
      }
    }
  });

  if (t.needs_grad(out)) {
    t.on_backward([&t, q, k, v, out, probs, keys, first, nq, H, G, D, QW, KW, Hk, total, scale] {
      const T *pq = t.value(q), *pk = t.value(k), *pv = t.value(v), *go = t.grad(out);
      T *gq = t.grad(q), *gk = t.grad(k), *gv = t.grad(v);
      // One task per KV head: it owns that head's dk / dv columns and the dq columns of the
      // query heads in its group, so no two tasks write the same memory.
      t.pool().parallel_for(0, Hk, [&](int64_t t0, int64_t t1) {
        std::vector<T> ds;
        for (int64_t g = t0; g < t1; ++g) {
          for (int64_t h = g * G; h < (g + 1) * G; ++h) {
            const T* p = probs->data() + h * total;
            for (int64_t i = 0; i < nq; ++i) {
              const int64_t f0 = (*first)[static_cast<size_t>(i)], f1 = (*first)[static_cast<size_t>(i + 1)];
              const T* doi = go + i * QW + h * D;
              ds.resize(static_cast<size_t>(f1 - f0));
              // dp_j = dO_i · v_j; ds_j = p_j (dp_j − Σ_l p_l dp_l)
              T pdp = 0;
              for (int64_t f = f0; f < f1; ++f) {
                const T dp = head_dot(doi, pv + (*keys)[static_cast<size_t>(f)] * KW + g * D, D);
                ds[static_cast<size_t>(f - f0)] = dp;
                pdp += p[f] * dp;
              }
              const T* qi = pq + i * QW + h * D;
              for (int64_t f = f0; f < f1; ++f) {
                const T dsj = p[f] * (ds[static_cast<size_t>(f - f0)] - pdp) * scale;
                const int64_t kr = (*keys)[static_cast<size_t>(f)] * KW + g * D;
                if (gq) head_axpy(dsj, pk + kr, gq + i * QW + h * D, D);
                if (gk) head_axpy(dsj, qi, gk + kr, D);
                if (gv) head_axpy(p[f], doi, gv + kr, D);
              }
            }
          }
        }
      });
    });
  }
  return out;
}

template <typename T>
Var concat_rows(Tape<T>& t, Var a, Var b) {
  SQZ_CHECK(t.cols(a) == t.cols(b), "concat_rows: widths ", t.cols(a), " and ", t.cols(b), " differ");
  const int64_t na = t.size(a), nb = t.size(b);
  Var y = t.output(t.rows(a) + t.rows(b), t.cols(a), t.needs_grad(a) || t.needs_grad(b));
  std::copy_n(t.value(a), na, t.value(y));
  std::copy_n(t.value(b), nb, t.value(y) + na);
  if (t.needs_grad(y)) {
    t.on_backward([&t, a, b, y, na, nb] {
      const T* gy = t.grad(y);
      if (T* ga = t.grad(a)) for (int64_t i = 0; i < na; ++i) ga[i] += gy[i];
      if (T* gb = t.grad(b)) for (int64_t i = 0; i < nb; ++i) gb[i] += gy[na + i];
    });
  }
  return y;
}

template <typename T>
Var weighted_cross_entropy(Tape<T>& t, Var logits, std::span<const int32_t> targets, std::span<const float> weights) {
  const int64_t n = t.rows(logits), V = t.cols(logits);
  SQZ_CHECK(static_cast<int64_t>(targets.size()) == n && static_cast<int64_t>(weights.size()) == n,
            "weighted cross-entropy: ", targets.size(), " targets and ", weights.size(), " weights for ", n, " rows");
  double wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    SQZ_CHECK(targets[static_cast<size_t>(i)] < V, "weighted cross-entropy: target ", targets[static_cast<size_t>(i)],
              " outside [0, ", V, ")");
    SQZ_CHECK(weights[static_cast<size_t>(i)] >= 0, "weighted cross-entropy: negative weight");
    if (targets[static_cast<size_t>(i)] >= 0) wsum += weights[static_cast<size_t>(i)];
  }
  SQZ_CHECK(wsum > 0, "weighted cross-entropy: no row with a target and a weight");
  // softmax rows kept for the backward pass
  auto soft = std::make_shared<std::vector<T>>(static_cast<size_t>(n * V));
  std::vector<double> row_loss(static_cast<size_t>(n), 0.0);
  const T* pl = t.value(logits);
  detail::for_rows(t.pool(), n, V, [&](int64_t i) {
    const int32_t y = targets[static_cast<size_t>(i)];
    if (y < 0 || weights[static_cast<size_t>(i)] == 0) return;
    const T* l = pl + i * V;
    T* sm = soft->data() + i * V;
    const T mx = *std::max_element(l, l + V);
    double sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += static_cast<double>(sm[j] = std::exp(l[j] - mx));
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t j = 0; j < V; ++j) sm[j] *= inv;
    row_loss[static_cast<size_t>(i)] = -(static_cast<double>(l[y] - mx) - std::log(sum));
  });
  Var loss = t.output(1, 1, t.needs_grad(logits));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += weights[static_cast<size_t>(i)] * row_loss[static_cast<size_t>(i)];
  t.value(loss)[0] = static_cast<T>(total / wsum);
  if (t.needs_grad(loss)) {
    std::vector<T> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      w[static_cast<size_t>(i)] = targets[static_cast<size_t>(i)] >= 0 ? static_cast<T>(weights[static_cast<size_t>(i)] / wsum) : T(0);
    std::vector<int32_t> ys(targets.begin(), targets.end());
    t.on_backward([&t, logits, loss, soft, w = std::move(w), ys = std::move(ys), n, V] {
      const T g = t.grad(loss)[0];
      T* gl = t.grad(logits);
      detail::for_rows(t.pool(), n, V, [&](int64_t i) {
        const T wi = w[static_cast<size_t>(i)] * g;
        if (wi == T(0)) return;
        const T* sm = soft->data() + i * V;
        T* gi = gl + i * V;
        for (int64_t j = 0; j < V; ++j) gi[j] += wi * sm[j];
        gi[ys[static_cast<size_t>(i)]] -= wi;
      });
    });
  }
  return loss;
}

#define SQZ_TRAIN_INSTANTIATE(T)                                                                                   \
  template Var masked_attention<T>(Tape<T>&, Var, Var, Var, const MaskedAttentionSpec&,                           \
                                   std::span<const std::array<int64_t, 4>>);                                       \
  template Var concat_rows<T>(Tape<T>&, Var, Var);                                                                 \
  template Var weighted_cross_entropy<T>(Tape<T>&, Var, std::span<const int32_t>, std::span<const float>);
SQZ_TRAIN_INSTANTIATE(float)
SQZ_TRAIN_INSTANTIATE(double)
#undef SQZ_TRAIN_INSTANTIATE

}  // namespace squeeze::train
