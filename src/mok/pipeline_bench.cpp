// mok/pipeline_bench.cpp — fused against unfused, phase by phase, on every rank at once.
#include "mok/pipeline_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "mok/bench.h"
#include "mok/layer.h"

namespace squeeze::mok {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) { return median_of(std::move(v)); }

// Per iteration: barrier, forward (and barrier, backward), each phase's slowest rank.
struct Samples {
  std::vector<double> fwd[5], bwd[5];  // total, dispatch, experts, pipeline, combine
  std::vector<double> exposed_fwd, exposed_bwd;  // fused: the pipeline's exposed share of its transfers
  PhaseTimes medians(const std::vector<double> (&v)[5]) const {
    return {median(v[0]), median(v[1]), median(v[2]), median(v[3]), median(v[4])};
  }
};

// The fused pipeline's own account: the time its compute workers waited for rows (the
// transfer they could not overlap, the first minibatch's included) over the transfer time
// (communication workers' busy time per worker). 0 for an unfused layer.
double exposed_share(const MoeLayer& layer) {
  const PipelineStats& st = layer.pipeline_stats();
  if (!layer.options().fused || st.fetch_s <= 0) return 0;
  const double fetch = st.fetch_s / layer.options().pipeline.comm_workers;
  const double starved = st.starved_s / layer.options().pipeline.compute_workers;
  return std::clamp(starved / fetch, 0.0, 1.0);
}

void time_layer(Transport& t, MoeLayer& layer, const std::vector<float>& x, const std::vector<float>& dout,
                MoeWeights& grads, bool backward, bool record, Samples& s) {
  const MoeConfig& cfg = layer.dispatcher().config();
  std::vector<float> out(x.size()), dx(x.size());
  t.barrier();
  auto t0 = Clock::now();
  layer.forward(x.data(), cfg.T(), out.data());
  double f[5] = {since(t0), layer.forward_timing().dispatch_s, layer.forward_timing().experts_s,
                 layer.forward_timing().pipeline_s, layer.forward_timing().combine_s};
  t.allreduce(f, 5, ReduceOp::Max);
  double exposed = exposed_share(layer);
  t.allreduce(&exposed, 1, ReduceOp::Max);
  if (record) {
    for (int i = 0; i < 5; ++i) s.fwd[i].push_back(f[i]);
    s.exposed_fwd.push_back(exposed);
  }
  if (!backward) return;
  t.barrier();
  t0 = Clock::now();
  layer.backward(dout.data(), dx.data(), grads);
  double b[5] = {since(t0), layer.backward_timing().dispatch_s, layer.backward_timing().experts_s,
                 layer.backward_timing().pipeline_s, layer.backward_timing().combine_s};
  t.allreduce(b, 5, ReduceOp::Max);
  exposed = exposed_share(layer);
  t.allreduce(&exposed, 1, ReduceOp::Max);
  if (record) {
    for (int i = 0; i < 5; ++i) s.bwd[i].push_back(b[i]);
    s.exposed_bwd.push_back(exposed);
  }
}

double hidden_share(const PhaseTimes& unfused, const PhaseTimes& fused) {
  if (unfused.dispatch_s <= 0) return 0;
  const double h = (unfused.dispatch_s + unfused.experts_s - fused.pipeline_s) / unfused.dispatch_s;
  return std::clamp(h, 0.0, 1.0);
}

// One thread per rank, all ranks at once (the dispatch's own contention): best of a few
// copies of `bytes`.
double memcpy_gbs(Transport& t, size_t bytes) {
  bytes = std::max<size_t>(bytes, 1 << 20);
  std::vector<std::byte> a(bytes, std::byte{1}), b(bytes);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    t.barrier();
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, since(t0));
  }
  double gbs = double(bytes) / best / 1e9;
  t.allreduce(&gbs, 1, ReduceOp::Sum);
  return gbs / t.size();
}

}  // namespace

PipelineBenchResult bench_pipeline(Transport& t, const MoeWeights& w, const PipelineBenchOptions& opt) {
  const MoeConfig cfg(opt.shape);
  const int64_t T = cfg.T(), H = cfg.H();
  std::mt19937_64 rng(uint64_t(t.rank()) + 1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(T * H)), dout(x.size());
  for (float& v : x) v = u(rng);
  for (float& v : dout) v = u(rng);
  MoeWeights grads = local_zeros(cfg, t.rank());

  PipelineBenchResult r;
  r.cores = std::thread::hardware_concurrency();
  r.threads_per_rank = opt.pipeline.comm_workers + opt.pipeline.compute_workers;
  Samples unfused, fused, collective;
  // The same expert tiles in every layer (ExpertGroup::tile_rows): only the exchange differs.
  LayerOptions plain_opt;
  plain_opt.pipeline = opt.pipeline;
  LayerOptions a2a_opt(DispatchStyle::Alltoallv, CombineStyle::Alltoallv);
  a2a_opt.pipeline = opt.pipeline;
  r.has_alltoallv = t.name() == "mpi-shm" || t.name() == "mpi-rma";
  {
    MoeLayer plain(cfg, t, w, plain_opt);
    MoeLayer piped(cfg, t, w, LayerOptions::fused_pull(opt.pipeline));
    std::unique_ptr<MoeLayer> a2a;
    if (r.has_alltoallv) a2a = std::make_unique<MoeLayer>(cfg, t, w, a2a_opt);
    // Alternate the layers in every iteration, so that drift on a shared machine hits all.
    for (int it = 0; it < opt.warmup + opt.iters; ++it) {
      const bool record = it >= opt.warmup;
      time_layer(t, plain, x, dout, grads, opt.backward, record, unfused);
      time_layer(t, piped, x, dout, grads, opt.backward, record, fused);
      if (a2a) time_layer(t, *a2a, x, dout, grads, opt.backward, record, collective);
    }
    r.rows = piped.handle().n_rows();
    r.waves = piped.pipeline_stats().plan.waves;
    r.minibatches = piped.pipeline_stats().plan.minibatches();
    double bytes[2] = {double(plain.handle().n_rows()) * double(cfg.row_bytes()),
                       double(T * cfg.K()) * double(cfg.row_bytes())};
    t.allreduce(bytes, 2, ReduceOp::Sum);
    r.dispatch_bytes = bytes[0] / t.size();
    r.combine_bytes = bytes[1] / t.size();
  }
  r.unfused_fwd = unfused.medians(unfused.fwd);
  r.fused_fwd = fused.medians(fused.fwd);
  r.unfused_bwd = unfused.medians(unfused.bwd);
  r.alltoallv_fwd = collective.medians(collective.fwd);
  r.alltoallv_bwd = collective.medians(collective.bwd);
  r.fused_bwd = fused.medians(fused.bwd);
  r.hidden_fwd = hidden_share(r.unfused_fwd, r.fused_fwd);
  r.hidden_bwd = opt.backward ? hidden_share(r.unfused_bwd, r.fused_bwd) : 0;
  r.overlap_fwd = 1 - median(fused.exposed_fwd);
  r.overlap_bwd = opt.backward ? 1 - median(fused.exposed_bwd) : 0;
  r.memcpy_gbs = memcpy_gbs(t, size_t(r.dispatch_bytes));

  // Every minibatch size in every iteration, in turn, so that drift on a shared machine
  // hits all sizes alike instead of the ones timed last.
  std::vector<std::unique_ptr<MoeLayer>> swept;
  for (int waves : opt.sweep_waves) {
    PipelineOptions p = opt.pipeline;
    p.waves = waves;
    swept.push_back(std::make_unique<MoeLayer>(cfg, t, w, LayerOptions::fused_pull(p)));
  }
  std::vector<Samples> sweep_samples(swept.size());
  for (int it = 0; it < opt.warmup + opt.iters; ++it)
    for (size_t i = 0; i < swept.size(); ++i)
      time_layer(t, *swept[i], x, dout, grads, false, it >= opt.warmup, sweep_samples[i]);
  for (size_t i = 0; i < swept.size(); ++i)
    r.sweep.emplace_back(opt.sweep_waves[i], median(sweep_samples[i].fwd[0]));
  return r;
}

}  // namespace squeeze::mok
