// train/ops_loss.cpp — cross-entropy and the distillation KL divergences (full vocabulary
// and top-k sparse teacher). Per-row losses are summed serially so that the result does
// not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "train/ops.h"

namespace squeeze::train {

namespace {

// log-softmax of x[0..V) / tau into out; returns nothing, out may not alias x.
template <typename T, typename In>
void log_softmax(const In* x, int64_t V, T tau, T* out) {
  T mx = -INFINITY;
  for (int64_t j = 0; j < V; ++j) mx = std::max(mx, static_cast<T>(x[j]) / tau);
  T sum = 0;
  for (int64_t j = 0; j < V; ++j) sum += std::exp(static_cast<T>(x[j]) / tau - mx);
  const T lse = mx + std::log(sum);
  for (int64_t j = 0; j < V; ++j) out[j] = static_cast<T>(x[j]) / tau - lse;
}

template <typename T>
Var sum_rows_to_scalar(Tape<T>& t, const std::vector<T>& per_row, T factor, bool needs_grad) {
  Var loss = t.output(1, 1, needs_grad);
  T total = 0;
  for (T v : per_row) total += v;  // serial: independent of the thread count
  t.value(loss)[0] = total * factor;
  return loss;
}

// The scalar KL loss (per-row sums × factor) and its backward: the gradient w.r.t. the
// student's logits is dlogits (d loss / d (logits/τ) per row) × factor / τ. Shared by the
// full-vocabulary and the top-k forms.
template <typename T>
Var kl_loss_output(Tape<T>& t, Var student, const std::vector<T>& per_row, std::shared_ptr<std::vector<T>> dlogits,
                   T factor, T tau) {
  Var loss = sum_rows_to_scalar(t, per_row, factor, t.needs_grad(student));
  if (t.needs_grad(loss)) {
    t.on_backward([&t, student, loss, dlogits, factor, tau] {
      const T g = t.grad(loss)[0] * factor / tau;
      T* gx = t.grad(student);
      for (size_t i = 0; i < dlogits->size(); ++i) gx[i] += g * (*dlogits)[i];
    });
  }
  return loss;
}

// The rows a KL averages over: those whose target is not -1 (all when `targets` is empty).
int64_t count_scored_rows(std::span<const int32_t> targets, int64_t n, const char* op) {
  if (targets.empty()) return n;
  SQZ_CHECK(static_cast<int64_t>(targets.size()) == n, op, ": ", targets.size(), " targets for ", n, " rows");
  int64_t count = 0;
  for (int32_t y : targets) count += y != -1;
  SQZ_CHECK(count > 0, op, ": every row is masked out");
  return count;
}
bool scored(std::span<const int32_t> targets, int64_t i) { return targets.empty() || targets[static_cast<size_t>(i)] != -1; }

}  // namespace

template <typename T>
Var cross_entropy(Tape<T>& t, Var logits, std::span<const int32_t> targets) {
  const int64_t n = t.rows(logits), V = t.cols(logits);
  SQZ_CHECK(static_cast<int64_t>(targets.size()) == n, "cross_entropy: ", targets.size(), " targets for ", n, " rows");
  int64_t count = 0;
  for (int32_t y : targets) {
    SQZ_CHECK(y >= -1 && y < V, "cross_entropy: target ", y, " outside [0, ", V, ") (or -1 to ignore)");
    count += y >= 0;
  }
  SQZ_CHECK(count > 0, "cross_entropy: every target is ignored");
  std::vector<T> per_row(static_cast<size_t>(n), T(0));
  const T* x = t.value(logits);
  t.pool().parallel_for(0, n, [&](int64_t r0, int64_t r1) {
    std::vector<T> lp(static_cast<size_t>(V));
    for (int64_t i = r0; i < r1; ++i)
      if (targets[i] >= 0) {
        log_softmax(x + i * V, V, T(1), lp.data());
        per_row[static_cast<size_t>(i)] = -lp[static_cast<size_t>(targets[i])];
      }
  });
  const T inv = T(1) / static_cast<T>(count);
  Var loss = sum_rows_to_scalar(t, per_row, inv, t.needs_grad(logits));
  if (t.needs_grad(loss)) {
    std::vector<int32_t> tg(targets.begin(), targets.end());
    t.on_backward([&t, logits, loss, tg = std::move(tg), n, V, inv] {
      const T* x = t.value(logits);
      T* gx = t.grad(logits);
      const T g = t.grad(loss)[0] * inv;
      t.pool().parallel_for(0, n, [&](int64_t r0, int64_t r1) {
        std::vector<T> lp(static_cast<size_t>(V));
        for (int64_t i = r0; i < r1; ++i) {
          if (tg[static_cast<size_t>(i)] < 0) continue;
          log_softmax(x + i * V, V, T(1), lp.data());
          for (int64_t j = 0; j < V; ++j) gx[i * V + j] += g * std::exp(lp[static_cast<size_t>(j)]);
          gx[i * V + tg[static_cast<size_t>(i)]] -= g;
        }
      });
    });
  }
  return loss;
}

template <typename T>
Var kl_divergence(Tape<T>& t, Var student, std::span<const float> teacher, const KlParams& p,
                  std::span<const int32_t> targets) {
  const int64_t n = t.rows(student), V = t.cols(student);
  SQZ_CHECK(static_cast<int64_t>(teacher.size()) == n * V, "kl_divergence: teacher has ", teacher.size(),
            " logits for [", n, ", ", V, "]");
  SQZ_CHECK(std::isfinite(p.temperature) && p.temperature > 0, "kl_divergence: temperature must be positive");
  SQZ_CHECK(n > 0, "kl_divergence: no tokens");
  const int64_t count = count_scored_rows(targets, n, "kl_divergence");
  const T tau = static_cast<T>(p.temperature);
  const bool fwd = p.direction == KlDirection::forward;
  std::vector<T> per_row(static_cast<size_t>(n), T(0));
  // Gradient w.r.t. the student's logits, computed with the loss (it needs the same
  // log-probabilities) and applied in backward.
  auto dlogits = std::make_shared<std::vector<T>>(static_cast<size_t>(n * V));
  const T* x = t.value(student);
  t.pool().parallel_for(0, n, [&](int64_t r0, int64_t r1) {
    std::vector<T> ls(static_cast<size_t>(V)), lt(static_cast<size_t>(V));
    for (int64_t i = r0; i < r1; ++i) {
      if (!scored(targets, i)) continue;  // per_row and dlogits stay 0
      log_softmax(x + i * V, V, tau, ls.data());
      log_softmax(teacher.data() + i * V, V, tau, lt.data());
      T kl = 0;
      for (int64_t j = 0; j < V; ++j) {
        const T a = ls[static_cast<size_t>(j)] - lt[static_cast<size_t>(j)];
        kl += fwd ? -std::exp(lt[static_cast<size_t>(j)]) * a : std::exp(ls[static_cast<size_t>(j)]) * a;
      }
      per_row[static_cast<size_t>(i)] = kl;
      T* d = dlogits->data() + i * V;
      for (int64_t j = 0; j < V; ++j) {
        const T ps = std::exp(ls[static_cast<size_t>(j)]), pt = std::exp(lt[static_cast<size_t>(j)]);
        // d/dz_j (z = logits/τ): forward p_S − p_T; reverse p_S (log p_S − log p_T − KL)
        d[j] = fwd ? ps - pt : ps * (ls[static_cast<size_t>(j)] - lt[static_cast<size_t>(j)] - kl);
      }
    }
  });
  return kl_loss_output(t, student, per_row, std::move(dlogits), static_cast<T>(p.scale) / static_cast<T>(count), tau);
}

TopKTeacher topk_teacher(std::span<const float> logits, int64_t n, int64_t V, int64_t k, float temperature) {
  SQZ_CHECK(n >= 0 && V > 0 && static_cast<int64_t>(logits.size()) == n * V, "topk_teacher: ", logits.size(),
            " logits for [", n, ", ", V, "]");
  SQZ_CHECK(k > 0 && k <= V, "topk_teacher: k = ", k, " must be in [1, ", V, "]");
  SQZ_CHECK(std::isfinite(temperature) && temperature > 0, "topk_teacher: temperature must be positive");
  TopKTeacher out{.k = k, .temperature = temperature, .ids = std::vector<int32_t>(static_cast<size_t>(n * k)),
                  .logprobs = std::vector<float>(static_cast<size_t>(n * k))};
  std::vector<double> lp(static_cast<size_t>(V));
  std::vector<int32_t> order(static_cast<size_t>(V));
  for (int64_t i = 0; i < n; ++i) {
    log_softmax(logits.data() + i * V, V, static_cast<double>(temperature), lp.data());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      return lp[static_cast<size_t>(a)] > lp[static_cast<size_t>(b)] || (lp[static_cast<size_t>(a)] == lp[static_cast<size_t>(b)] && a < b);
    });
    for (int64_t j = 0; j < k; ++j) {
      out.ids[static_cast<size_t>(i * k + j)] = order[static_cast<size_t>(j)];
      out.logprobs[static_cast<size_t>(i * k + j)] = static_cast<float>(lp[static_cast<size_t>(order[static_cast<size_t>(j)])]);
    }
  }
  return out;
}

template <typename T>
Var kl_divergence_topk(Tape<T>& t, Var student, const TopKTeacher& teacher, const KlParams& p,
                       std::span<const int32_t> targets) {
  const int64_t n = t.rows(student), V = t.cols(student), K = teacher.k;
  SQZ_CHECK(K > 0 && K <= V && teacher.n_tokens() == n && teacher.logprobs.size() == teacher.ids.size(),
            "kl_divergence_topk: teacher holds ", teacher.ids.size(), " ids (k = ", K, ") for ", n,
            " tokens of a vocabulary of ", V);
  SQZ_CHECK(p.temperature == teacher.temperature, "kl_divergence_topk: the teacher's log-probs are at temperature ",
            teacher.temperature, ", the loss asks for ", p.temperature);
  SQZ_CHECK(n > 0, "kl_divergence_topk: no tokens");
  const int64_t count = count_scored_rows(targets, n, "kl_divergence_topk");
  const T tau = static_cast<T>(p.temperature);
  const bool fwd = p.direction == KlDirection::forward;
  constexpr T kTailFloor = T(1e-12);   // r_T floor (see ops.h)
  constexpr T kLogFloor = T(1e-30);    // keeps log r_S finite if the student's tail underflows
  std::vector<T> per_row(static_cast<size_t>(n), T(0));
  auto dlogits = std::make_shared<std::vector<T>>(static_cast<size_t>(n * V));
  const T* x = t.value(student);
  t.pool().parallel_for(0, n, [&](int64_t r0, int64_t r1) {
    std::vector<T> ls(static_cast<size_t>(V));
    std::vector<int32_t> slot(static_cast<size_t>(V), -1);  // top-k position of each id, −1: tail
    std::vector<T> ge(static_cast<size_t>(K + 1));          // dL/dq_S per event (K ids, tail)
    for (int64_t i = r0; i < r1; ++i) {
      if (!scored(targets, i)) continue;
      const int32_t* ids = teacher.ids.data() + i * K;
      const float* lpt = teacher.logprobs.data() + i * K;
      log_softmax(x + i * V, V, tau, ls.data());
      T qt_sum = 0;
      for (int64_t e = 0; e < K; ++e) {
        SQZ_CHECK(ids[e] >= 0 && ids[e] < V && slot[static_cast<size_t>(ids[e])] < 0, "kl_divergence_topk: token ", i,
                  ": id ", ids[e], " is out of range or repeated");
        SQZ_CHECK(std::isfinite(lpt[e]) && lpt[e] <= 1e-6f, "kl_divergence_topk: token ", i, ": log-prob ", lpt[e],
                  " is not a log-probability");
        slot[static_cast<size_t>(ids[e])] = static_cast<int32_t>(e);
        qt_sum += std::exp(static_cast<T>(lpt[e]));
      }
      T rs = 0;
      for (int64_t j = 0; j < V; ++j)
        if (slot[static_cast<size_t>(j)] < 0) rs += std::exp(ls[static_cast<size_t>(j)]);
      const T rt = std::max(T(1) - qt_sum, kTailFloor);
      const T log_rt = std::log(rt), log_rs = std::log(std::max(rs, kLogFloor));
      // Loss over the K + 1 events and g_e = dL/dq_S,e.
      T kl = 0, c = 0;  // c = Σ_e q_S,e g_e
      for (int64_t e = 0; e <= K; ++e) {
        const bool tail = e == K;
        const T lqs = tail ? log_rs : ls[static_cast<size_t>(ids[e])];
        const T lqt = tail ? log_rt : static_cast<T>(lpt[e]);
        const T qs = tail ? rs : std::exp(lqs), qt = tail ? rt : std::exp(lqt);
        T g;
        if (fwd) {
          kl += qt * (lqt - lqs);
          g = -qt / std::max(qs, kLogFloor);
        } else {
          kl += qs * (lqs - lqt);
          g = lqs - lqt + T(1);
        }
        ge[static_cast<size_t>(e)] = g;
        c += qs * g;
      }
      per_row[static_cast<size_t>(i)] = kl;
      // dL/dz_j = p_S,j (g_{event(j)} − c), z = logits/τ
      T* d = dlogits->data() + i * V;
      for (int64_t j = 0; j < V; ++j) {
        const int32_t e = slot[static_cast<size_t>(j)];
        d[j] = std::exp(ls[static_cast<size_t>(j)]) * (ge[static_cast<size_t>(e < 0 ? K : e)] - c);
      }
      for (int64_t e = 0; e < K; ++e) slot[static_cast<size_t>(ids[e])] = -1;
    }
  });
  return kl_loss_output(t, student, per_row, std::move(dlogits), static_cast<T>(p.scale) / static_cast<T>(count), tau);
}

#define SQZ_TRAIN_INSTANTIATE(T)                                                                   \
  template Var cross_entropy<T>(Tape<T>&, Var, std::span<const int32_t>);                          \
  template Var kl_divergence<T>(Tape<T>&, Var, std::span<const float>, const KlParams&,             \
                                std::span<const int32_t>);                                         \
  template Var kl_divergence_topk<T>(Tape<T>&, Var, const TopKTeacher&, const KlParams&,           \
                                     std::span<const int32_t>);
SQZ_TRAIN_INSTANTIATE(float)
SQZ_TRAIN_INSTANTIATE(double)
#undef SQZ_TRAIN_INSTANTIATE

}  // namespace squeeze::train
