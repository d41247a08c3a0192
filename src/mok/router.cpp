// mok/router.cpp — f32 router forward/backward used by the distributed layer.
#include "mok/router.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace squeeze::mok {

void Routing::validate(const MoeConfig& cfg) const {
  SQZ_CHECK(K == cfg.K(), "routing: top-k ", K, " does not match the config's K=", cfg.K());
  SQZ_CHECK(tokens >= 0 && tokens <= cfg.T(), "routing: ", tokens, " tokens exceed the config's T=", cfg.T());
  SQZ_CHECK(expert.size() == size_t(tokens * K) && gate.size() == size_t(tokens * K), "routing: expected ",
            tokens * K, " expert ids and gates, got ", expert.size(), " and ", gate.size());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int k = 0; k < K; ++k) {
      const int32_t e = expert[size_t(t * K + k)];
      SQZ_CHECK(e >= 0 && e < cfg.E(), "routing: token ", t, " slot ", k, ": expert id ", e, " is outside [0, ",
                cfg.E(), ")");
      SQZ_CHECK(std::isfinite(gate[size_t(t * K + k)]), "routing: token ", t, " slot ", k, ": gate is not finite");
      for (int j = 0; j < k; ++j)
        SQZ_CHECK(expert[size_t(t * K + j)] != e, "routing: token ", t, " chooses expert ", e, " twice");
    }
  }
}

void select_experts(const ExpertSelection& sel, float* s, int32_t* order, int32_t* expert, float* gate) {
  const int E = sel.n_experts, K = sel.top_k;
  if (sel.scoring == Scoring::Softmax) {
    const float m = *std::max_element(s, s + E);
    float sum = 0;
    for (int e = 0; e < E; ++e) sum += (s[e] = std::exp(s[e] - m));
    for (int e = 0; e < E; ++e) s[e] /= sum;
  } else {
    for (int e = 0; e < E; ++e) s[e] = 1.0f / (1.0f + std::exp(-s[e]));
  }
  std::iota(order, order + E, 0);
  std::partial_sort(order, order + K, order + E,
                    [&](int32_t a, int32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
  float total = 0;
  for (int k = 0; k < K; ++k) total += s[order[k]];
  for (int k = 0; k < K; ++k) {
    expert[k] = order[k];
    gate[k] = sel.normalize ? s[order[k]] / total : s[order[k]];
  }
}

Routing route(const MoeConfig& cfg, const MoeWeights& w, const float* x, int64_t tokens, RouterCache* cache) {
  const int E = cfg.E(), K = cfg.K();
  const int64_t H = cfg.H();
  Routing r{tokens, K, std::vector<int32_t>(size_t(tokens * K)), std::vector<float>(size_t(tokens * K))};
  std::vector<float> scores(size_t(tokens * E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  const ExpertSelection sel{.n_experts = E, .top_k = K, .scoring = cfg.shape().scoring, .normalize = true};
  for (int64_t t = 0; t < tokens; ++t) {
    float* s = &scores[size_t(t * E)];
    for (int e = 0; e < E; ++e) {
      const float* we = &w.router[size_t(e * H)];
      float acc = w.router_bias[size_t(e)];
      for (int64_t h = 0; h < H; ++h) acc += we[h] * x[t * H + h];
      s[e] = acc;
    }
    select_experts(sel, s, order.data(), &r.expert[size_t(t * K)], &r.gate[size_t(t * K)]);
  }
  if (cache) cache->scores = std::move(scores);
  return r;
}

void route_backward(const MoeConfig& cfg, const MoeWeights& w, const float* x, const Routing& r,
                    const RouterCache& cache, const float* dgate, float* dx, MoeWeights& grads) {
  const int E = cfg.E(), K = cfg.K();
  const int64_t H = cfg.H();
  std::vector<float> ds(static_cast<size_t>(E)), dl(static_cast<size_t>(E));
  for (int64_t t = 0; t < r.tokens; ++t) {
    const float* s = &cache.scores[size_t(t * E)];
    const int32_t* ex = &r.expert[size_t(t * K)];
    const float* g = &r.gate[size_t(t * K)];
    const float* dg = &dgate[t * K];
    // gate_k = s_k / S over the selected: dL/ds_k = (dg_k - sum_j g_j dg_j) / S.
    float S = 0, gdg = 0;
    for (int k = 0; k < K; ++k) S += s[ex[k]], gdg += g[k] * dg[k];
    std::fill(ds.begin(), ds.end(), 0.0f);
    for (int k = 0; k < K; ++k) ds[size_t(ex[k])] = (dg[k] - gdg) / S;
    if (cfg.shape().scoring == Scoring::Softmax) {
      float dot = 0;
      for (int e = 0; e < E; ++e) dot += ds[size_t(e)] * s[e];
      for (int e = 0; e < E; ++e) dl[size_t(e)] = s[e] * (ds[size_t(e)] - dot);
    } else {
      for (int e = 0; e < E; ++e) dl[size_t(e)] = ds[size_t(e)] * s[e] * (1.0f - s[e]);
    }
    for (int e = 0; e < E; ++e) {
      const float d = dl[size_t(e)];
      if (d == 0.0f) continue;
      grads.router_bias[size_t(e)] += d;
      float* gw = &grads.router[size_t(e * H)];
      const float* we = &w.router[size_t(e * H)];
      for (int64_t h = 0; h < H; ++h) {
        gw[h] += d * x[t * H + h];
        dx[t * H + h] += d * we[h];
      }
    }
  }
}

}  // namespace squeeze::mok
