// mok/bench.cpp — timing dispatch and combine per style; the layer self-check.
#include "mok/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "mok/link_model.h"
#include "mok/mxfp8.h"
#include "mok/reference.h"

namespace squeeze::mok {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Routing synthetic_routing(const MoeConfig& cfg, int rank, int64_t tokens, double skew, uint64_t seed) {
  const int E = cfg.E(), K = cfg.K();
  std::mt19937_64 rng(seed * 7919 + uint64_t(rank));
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> base(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) base[size_t(e)] = 1.0 / std::pow(e + 1.0, skew);
  Routing r{tokens, K, {}, {}};
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<double> w = base;
    float sum = 0;
    for (int k = 0; k < K; ++k) {
      double pick = u(rng) * std::accumulate(w.begin(), w.end(), 0.0);
      int e = 0;
      while (e < E - 1 && (w[size_t(e)] == 0 || pick >= w[size_t(e)])) pick -= w[size_t(e)], ++e;
      while (w[size_t(e)] == 0) e = (e + 1) % E;  // rounding at the end of the range
      w[size_t(e)] = 0;
      r.expert.push_back(e);
      r.gate.push_back(float(0.5 + u(rng)));
      sum += r.gate.back();
    }
    for (int k = 0; k < K; ++k) r.gate[size_t(t * K + k)] /= sum;
  }
  return r;
}

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) { return median_of(std::move(v)); }

struct Timed {
  double dispatch_s, combine_s, known_s;
  Traffic traffic;
  double recv_bytes;  // all ranks
  LinkStats link;     // one dispatch's remote operations on this rank (link-modelled transports)
};

LinkStats link_stats(Transport& t) {
  const auto* lm = dynamic_cast<const LinkModelTransport*>(&t);
  return lm ? lm->stats() : LinkStats{};
}

// One measured round per iteration: barrier, dispatch, barrier, combine; each phase's
// time is the slowest rank's.
Timed run_style(Transport& t, const MoeConfig& cfg, DispatchStyle ds, CombineStyle cs, const BenchOptions& opt) {
  Dispatcher d(cfg, t);
  const Routing r = synthetic_routing(cfg, t.rank(), cfg.T(), opt.skew, 1);
  std::mt19937_64 rng(uint64_t(t.rank()));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(cfg.T() * cfg.H())), out(x.size()), rows;
  for (float& v : x) v = u(rng);
  std::vector<double> ds_t, cs_t, known_t;
  Traffic traffic;
  LinkStats link;
  double recv_rows = 0;
  for (int it = 0; it < opt.warmup + opt.iters; ++it) {
    d.barrier();
    d.clear_traffic();
    const LinkStats before = link_stats(t);
    auto t0 = Clock::now();
    DispatchHandle h = d.dispatch(ds, x.data(), r);
    double v[2] = {since(t0), d.last_timing().known_s};
    const LinkStats after = link_stats(t);
    const Traffic tr = d.traffic();
    rows.resize(size_t(h.n_rows() * cfg.H()));
    h.rows_to_f32(cfg, rows.data());  // stands in for the experts (identity)
    d.barrier();
    d.clear_traffic();
    t0 = Clock::now();
    d.combine(cs, h, rows.data(), {nullptr, out.data(), true});
    double c = since(t0);
    t.allreduce(v, 2, ReduceOp::Max);
    t.allreduce(&c, 1, ReduceOp::Max);
    if (it < opt.warmup) continue;
    ds_t.push_back(v[0]);
    known_t.push_back(v[1]);
    cs_t.push_back(c);
    traffic = tr;
    link = {after.gets - before.gets, after.puts - before.puts, after.flag_updates - before.flag_updates,
            after.flag_reads - before.flag_reads, after.remote_bytes - before.remote_bytes, 0};
    recv_rows = double(h.n_rows());
  }
  t.allreduce(&recv_rows, 1, ReduceOp::Sum);
  return {median(ds_t), median(cs_t), median(known_t), traffic, recv_rows * double(cfg.row_bytes()), link};
}
}  // namespace

std::vector<BenchRow> bench_dispatch(Transport& t, const BenchOptions& opt) {
  MoeShape tiny = opt.shape;
  tiny.hidden = opt.signal_hidden;
  if (tiny.payload == Payload::MXFP8) tiny.hidden = (tiny.hidden + kMxBlock - 1) / kMxBlock * kMxBlock;  // whole scale blocks
  const MoeConfig full(opt.shape), small(tiny);
  std::vector<BenchRow> rows;
  const std::pair<DispatchStyle, CombineStyle> styles[] = {{DispatchStyle::Pull, CombineStyle::Pull},
                                                           {DispatchStyle::PushNegotiated, CombineStyle::Push},
                                                           {DispatchStyle::PushPrivate, CombineStyle::Push}};
  for (auto [ds, cs] : styles) {
    BenchOptions sig = opt;
    sig.iters = std::max(opt.iters, 20);  // cheap: more samples for the noisy small number
    const Timed s = run_style(t, small, ds, cs, sig);
    const Timed f = run_style(t, full, ds, cs, opt);
    double kb[2] = {double(f.traffic.payload_bytes) / 1024, double(f.traffic.meta_bytes) / 1024};
    t.allreduce(kb, 2, ReduceOp::Sum);
    BenchRow row;
    row.transport = t.name();
    row.method = std::string(dispatch_style_name(ds)) + " / " + combine_style_name(cs);
    row.routing = opt.routing_name;
    row.signal_us = s.dispatch_s * 1e6;
    row.known_us = s.known_s * 1e6;
    row.dispatch_us = f.dispatch_s * 1e6;
    row.combine_us = f.combine_s * 1e6;
    row.dispatch_gbs = f.recv_bytes / f.dispatch_s / 1e9;
    row.combine_gbs = f.recv_bytes / f.combine_s / 1e9;
    row.payload_kb = kb[0] / t.size();
    row.meta_kb = kb[1] / t.size();
    // Per rank per dispatch (the tiny-payload run: the protocol's operations, not the
    // payload's): operations and round trips, averaged over ranks.
    double ops[2] = {double(s.link.ops()), double(s.link.round_trips())};
    t.allreduce(ops, 2, ReduceOp::Sum);
    row.remote_ops = ops[0] / t.size();
    row.round_trips = ops[1] / t.size();
    rows.push_back(row);
  }
  return rows;
}

VerifyResult verify_layer(Transport& t, const MoeConfig& cfg, LayerOptions opt, uint64_t seed) {
  const int64_t H = cfg.H(), T = cfg.T(), me = t.rank();
  const MoeWeights w = random_weights(cfg, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(cfg.R() * T * H)), dout(x.size());
  for (float& v : x) v = u(rng);
  for (float& v : dout) v = u(rng);
  MoeLayer layer(cfg, t, w, opt);
  std::vector<float> out(size_t(T * H)), dx(out.size());
  layer.forward(x.data() + me * T * H, T, out.data());
  MoeWeights g = MoeWeights::zeros(cfg);
  layer.backward(dout.data() + me * T * H, dx.data(), g);
  const RefWeights rw = to_double(w);
  const std::vector<double> xd(x.begin(), x.end()), dd(dout.begin(), dout.end());
  const auto ref = reference_forward(cfg, rw, xd);
  const auto rg = reference_backward(cfg, rw, xd, dd);
  VerifyResult v;
  // Norm-wise error (scaled by max(1, max|ref|)): [0] as measured, [1] beyond the
  // reference's per-value bound on bf16 rounding flips (0 almost everywhere).
  auto err = [&](const std::vector<float>& a, const std::vector<double>& b, const std::vector<double>& flip,
                 double* raw, double* beyond) {
    double scale = 1;
    *raw = *beyond = 0;
    for (size_t i = 0; i < a.size(); ++i) scale = std::max(scale, std::fabs(b[size_t(me * T * H) + i]));
    for (size_t i = 0; i < a.size(); ++i) {
      const double d = std::fabs(a[i] - b[size_t(me * T * H) + i]);
      *raw = std::max(*raw, d / scale);
      *beyond = std::max(*beyond, (d - flip[size_t(me * T * H) + i]) / scale);
    }
  };
  double e[4];
  err(out, ref.out, ref.out_flip, &e[0], &e[1]);
  err(dx, rg.dx, rg.dx_flip, &e[2], &e[3]);
  t.allreduce(e, 4, ReduceOp::Max);
  v.out_err = e[0], v.dx_err = e[2];
  // Same bound as the tests: f32 arithmetic (the reference rounds to bf16 where the layer
  // does), plus the flips the reference allows per value.
  v.tol = layer_f32_tolerance(cfg, cfg.R() * T);
  v.beyond_flips = std::max(e[1], e[3]);
  v.ok = v.beyond_flips <= v.tol;
  return v;
}

}  // namespace squeeze::mok
