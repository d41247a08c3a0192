// tests/mok/mok_checks.cpp — the rank-local checks behind the MoK tests.
#include "mok_checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "mok/payload.h"
#include "mok/reference.h"

namespace squeeze::mok::testing {

const char* route_mode_name(RouteMode m) {
  switch (m) {
    case RouteMode::Balanced: return "balanced";
    case RouteMode::Skewed: return "skewed";
    case RouteMode::OneExpert: return "one-expert";
    case RouteMode::EmptyExperts: return "empty-experts";
  }
  return "?";
}

int64_t tokens_on(const MoeConfig& cfg, int rank, int zero_rank) { return rank == zero_rank ? 0 : cfg.T(); }

Routing make_routing(const MoeConfig& cfg, int rank, int64_t tokens, RouteMode mode, uint64_t seed) {
  const int E = cfg.E(), K = cfg.K();
  std::mt19937_64 rng(seed * 1000003 + uint64_t(rank));
  std::vector<double> weight(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) {
    switch (mode) {
      case RouteMode::Balanced: weight[size_t(e)] = 1; break;
      case RouteMode::Skewed: weight[size_t(e)] = 1.0 / std::pow(e + 1.0, 1.5); break;  // Zipf-like
      case RouteMode::OneExpert: weight[size_t(e)] = e == 0 ? 1e9 : 1; break;
      case RouteMode::EmptyExperts: weight[size_t(e)] = (e % 2 == 0 || K > E / 2) ? 1 : 0; break;
    }
  }
  Routing r{tokens, K, {}, {}};
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<double> w = weight;
    float sum = 0;
    for (int k = 0; k < K; ++k) {
      const double total = std::accumulate(w.begin(), w.end(), 0.0);
      double pick = u(rng) * total;
      int e = 0;
      while (e < E - 1 && (pick >= w[size_t(e)] || w[size_t(e)] == 0)) pick -= w[size_t(e)], ++e;
      if (w[size_t(e)] == 0) e = int(std::find_if(w.begin(), w.end(), [](double v) { return v > 0; }) - w.begin());
      w[size_t(e)] = 0;
      r.expert.push_back(e);
      const float g = float(0.25 + u(rng));
      r.gate.push_back(g);
      sum += g;
    }
    for (int k = 0; k < K; ++k) r.gate[size_t(t * K + k)] /= sum;
  }
  return r;
}

namespace {
// Tag values are small integers, exact in bf16: column 0 = source rank, column 1 =
// token, the rest a mix of both.
float tag(int rank, int64_t t, int64_t h) {
  if (h == 0) return float(rank);
  if (h == 1) return float(t);
  return float((rank * 37 + t * 11 + h) % 200);
}
// `rows` as they arrive after one trip over the wire (the identity for bf16 and f32 tags;
// MXFP8 rounds them to its blocks' grids).
std::vector<float> over_wire(const MoeConfig& cfg, const std::vector<float>& rows) {
  std::vector<std::byte> wire(rows.size() / size_t(cfg.H()) * cfg.row_bytes());
  std::vector<float> out(rows.size());
  encode_rows(cfg, rows.data(), wire.data(), int64_t(rows.size()) / cfg.H());
  decode_rows(cfg, wire.data(), out.data(), int64_t(rows.size()) / cfg.H());
  return out;
}
std::vector<float> tag_row(int rank, int64_t t, int64_t H) {
  std::vector<float> row(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) row[size_t(h)] = tag(rank, t, h);
  return row;
}
}  // namespace

void check_dispatch_tagged(Transport& tr, const MoeConfig& cfg, DispatchStyle ds, CombineStyle cs, RouteMode mode,
                           int zero_rank, uint64_t seed) {
  const int me = tr.rank(), R = cfg.R(), K = cfg.K(), EL = cfg.experts_per_rank();
  const int64_t H = cfg.H();
  Dispatcher d(cfg, tr);
  std::vector<Routing> all;
  for (int r = 0; r < R; ++r) all.push_back(make_routing(cfg, r, tokens_on(cfg, r, zero_rank), mode, seed));
  const Routing& mine = all[size_t(me)];
  std::vector<float> x(size_t(mine.tokens * H));
  for (int64_t t = 0; t < mine.tokens; ++t)
    for (int64_t h = 0; h < H; ++h) x[size_t(t * H + h)] = tag(me, t, h);

  for (int rep = 0; rep < 2; ++rep) {  // the second run must be bit-identical
    DispatchHandle h = d.dispatch(ds, x.data(), mine);
    // Naive reference: for each local expert, sources ascending, tokens ascending.
    struct Expect {
      int s;
      int32_t t, k;
      float g;
    };
    std::vector<Expect> want;
    std::vector<int64_t> offsets{0};
    for (int e = 0; e < EL; ++e) {
      for (int s = 0; s < R; ++s)
        for (int64_t t = 0; t < all[size_t(s)].tokens; ++t)
          for (int k = 0; k < K; ++k)
            if (all[size_t(s)].expert[size_t(t * K + k)] == me * EL + e)
              want.push_back({s, int32_t(t), k, all[size_t(s)].gate[size_t(t * K + k)]});
      offsets.push_back(int64_t(want.size()));
    }
    SQZ_CHECK(h.n_rows() == int64_t(want.size()), "rank ", me, ": received ", h.n_rows(), " rows, expected ",
              want.size());
    for (int e = 0; e <= EL; ++e)
      SQZ_CHECK(h.expert_begin(e, R) == offsets[size_t(e)], "rank ", me, ": expert ", e, " starts at row ",
                h.expert_begin(e, R), ", expected ", offsets[size_t(e)]);
    std::vector<float> rows(size_t(h.n_rows() * H));
    h.rows_to_f32(cfg, rows.data());
    for (size_t i = 0; i < want.size(); ++i) {
      const Expect& w = want[i];
      SQZ_CHECK(h.src_rank[i] == w.s && h.src_index[i] == w.t && h.src_slot[i] == w.k && h.row_gate[i] == w.g,
                "rank ", me, " row ", i, ": metadata (", h.src_rank[i], ",", h.src_index[i], ",", h.src_slot[i],
                ") expected (", w.s, ",", w.t, ",", w.k, ")");
      const std::vector<float> expect = over_wire(cfg, tag_row(w.s, w.t, H));
      for (int64_t c = 0; c < H; ++c)
        SQZ_CHECK(rows[i * size_t(H) + size_t(c)] == expect[size_t(c)], "rank ", me, " row ", i, " column ", c,
                  ": payload ", rows[i * size_t(H) + size_t(c)], " is not from rank ", w.s, " token ", w.t);
    }
    // Global counts: summed over ranks, each expert got exactly what was routed to it.
    std::vector<double> counts(size_t(cfg.E()), 0.0), routed(size_t(cfg.E()), 0.0);
    for (int e = 0; e < EL; ++e) counts[size_t(me * EL + e)] = double(offsets[size_t(e + 1)] - offsets[size_t(e)]);
    for (int32_t e : mine.expert) routed[size_t(e)] += 1;
    tr.allreduce(counts.data(), cfg.E(), ReduceOp::Sum);
    tr.allreduce(routed.data(), cfg.E(), ReduceOp::Sum);
    SQZ_CHECK(counts == routed, "rank ", me, ": per-expert received counts differ from the routed counts");

    // Cached dispatch of the same rows: bit-identical to the forward rows.
    std::vector<float> again(rows.size());
    d.dispatch_cached(ds, h, x.data(), again.data());
    SQZ_CHECK(rows.empty() || std::memcmp(again.data(), rows.data(), rows.size() * 4) == 0, "rank ", me,
              ": cached dispatch differs from the forward rows");

    // Combine of the identity "expert": K copies unweighted; the gate-sum (= x) weighted;
    // x as it comes back after two trips over the wire.
    const std::vector<float> back = over_wire(cfg, over_wire(cfg, x));
    std::vector<float> sum(size_t(mine.tokens * H)), slots(size_t(mine.tokens * K * H));
    d.combine(cs, h, rows.data(), {slots.data(), sum.data(), false});
    for (size_t i = 0; i < sum.size(); ++i)
      SQZ_CHECK(sum[i] == float(K) * back[i] && slots[(i / size_t(H)) * size_t(K * H) + i % size_t(H)] == back[i],
                "rank ", me, ": unweighted combine value ", i, " is ", sum[i], ", expected ", float(K) * back[i]);
    d.combine(cs, h, rows.data(), {nullptr, sum.data(), true});
    for (size_t i = 0; i < sum.size(); ++i) {
      // Gates sum to 1 per token; K f32 products of exact integers: a few ulps.
      SQZ_CHECK(std::fabs(sum[i] - back[i]) <= 4 * K * 1.2e-7f * std::fabs(back[i]), "rank ", me,
                ": weighted combine ", sum[i], " vs ", back[i]);
    }
    tr.barrier();
  }
}

void bias_router(const MoeConfig& cfg, MoeWeights& w, RouteMode mode) {
  for (int e = 0; e < cfg.E(); ++e) {
    float& b = w.router_bias[size_t(e)];
    switch (mode) {
      case RouteMode::Balanced: b = 0; break;
      case RouteMode::Skewed: b = -1.5f * std::log(float(e + 1)); break;
      case RouteMode::OneExpert: b = e == 0 ? 30.0f : 0.0f; break;
      case RouteMode::EmptyExperts: b = (e % 2 == 0 || cfg.K() > cfg.E() / 2) ? 0.0f : -30.0f; break;
    }
  }
}

namespace {
// |a - ref| <= tol * max(1, max|ref|) + flip[i] for every i: a norm-wise f32 bound plus
// the reference's bound on bf16 rounding flips at that value (see the caller).
void expect_close(const char* what, int rank, const float* a, const double* ref, size_t n, double tol,
                  const double* flip = nullptr) {
  double scale = 1, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(ref[i]));
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(a[i]) - ref[i]) - (flip ? flip[i] : 0.0);
    if (!(d <= worst)) worst = d, at = i;
  }
  SQZ_CHECK(worst <= tol * scale, "rank ", rank, ": ", what, " differs from the reference by ", worst,
            " beyond its flip bound at ", at, " (", n ? a[at] : 0.0f, " vs ", n ? ref[at] : 0.0, "), bound ",
            tol * scale);
}
}  // namespace

std::vector<float> check_layer(Transport& tr, const MoeConfig& cfg, LayerOptions opt, RouteMode mode, int zero_rank,
                               uint64_t seed) {
  const int me = tr.rank(), R = cfg.R(), K = cfg.K(), EL = cfg.experts_per_rank();
  const int64_t H = cfg.H();
  MoeWeights w = random_weights(cfg, seed);
  bias_router(cfg, w, mode);
  // All ranks' tokens (each rank knows them all: the reference runs on every rank).
  std::mt19937_64 rng(seed + 17);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<int64_t> first{0};
  for (int r = 0; r < R; ++r) first.push_back(first.back() + tokens_on(cfg, r, zero_rank));
  const int64_t N = first.back();
  std::vector<float> x(size_t(N * H)), dout(size_t(N * H));
  for (float& v : x) v = u(rng);
  for (float& v : dout) v = u(rng);

  const RefWeights rw = to_double(w);
  const std::vector<double> xd(x.begin(), x.end()), dd(dout.begin(), dout.end());
  const ReferenceResult ref = reference_forward(cfg, rw, xd);
  const ReferenceGrads rg = reference_backward(cfg, rw, xd, dd);

  const int64_t n = first[size_t(me + 1)] - first[size_t(me)];
  const float* xl = x.data() + first[size_t(me)] * H;
  MoeLayer layer(cfg, tr, w, opt);
  std::vector<float> out(size_t(n * H)), dx(size_t(n * H));
  layer.forward(xl, n, out.data());
  for (int64_t i = 0; i < n * K; ++i)
    SQZ_CHECK(layer.routing().expert[size_t(i)] == ref.expert[size_t(first[size_t(me)] * K + i)], "rank ", me,
              ": routing differs from the reference at slot ", i);
  MoeWeights g = MoeWeights::zeros(cfg);
  layer.backward(dout.data() + first[size_t(me)] * H, dx.data(), g);

  // The layer computes in f32 what the reference computes in f64, rounding to bf16 at
  // the same points; so the bound is f32's: layer_f32_tolerance (a chain of at most
  // H + I + E + N accumulations at 2^-24 each), plus, per value, what bf16 rounding flips
  // can add there, which the reference bounds and which is 0 almost everywhere.
  const double tol = layer_f32_tolerance(cfg, N);
  expect_close("forward output", me, out.data(), ref.out.data() + first[size_t(me)] * H, out.size(), tol,
               ref.out_flip.data() + first[size_t(me)] * H);
  expect_close("input gradient", me, dx.data(), rg.dx.data() + first[size_t(me)] * H, dx.size(), tol,
               rg.dx_flip.data() + first[size_t(me)] * H);
  for (int e = 0; e < EL; ++e) {
    const int ge = me * EL + e;
    const auto& a = g.experts[size_t(ge)];
    const auto& b = rg.dw.experts[size_t(ge)];
    expect_close("expert gate-proj gradient", me, a.gate.data(), b.gate.data(), a.gate.size(), tol);
    expect_close("expert up-proj gradient", me, a.up.data(), b.up.data(), a.up.size(), tol);
    expect_close("expert down-proj gradient", me, a.down.data(), b.down.data(), a.down.size(), tol);
  }
  expect_close("router gradient", me, g.router.data(), rg.dw.router.data(), g.router.size(), tol,
               rg.router_flip.data());
  expect_close("router bias gradient", me, g.router_bias.data(), rg.dw.router_bias.data(), g.router_bias.size(), tol,
               rg.router_bias_flip.data());
  if (cfg.shape().shared_expert)
    expect_close("shared expert down gradient", me, g.shared.down.data(), rg.dw.shared.down.data(),
                 g.shared.down.size(), tol);

  // A second forward with the same layer (cached buffers) is bit-identical.
  std::vector<float> out2(out.size());
  layer.forward(xl, n, out2.data());
  SQZ_CHECK(out.empty() || std::memcmp(out.data(), out2.data(), out.size() * 4) == 0, "rank ", me,
            ": repeated forward is not bit-identical");
  return out;
}

}  // namespace squeeze::mok::testing
