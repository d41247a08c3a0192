// mok/mpi_alltoallv.cpp — MPI_Alltoallv dispatch/combine baseline for the benchmark.
#include "mok/mpi_alltoallv.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "kernels/cpu/ops.h"
#include "mok/payload.h"

namespace squeeze::mok {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Result {
  double dispatch_s, combine_s;
  double payload_bytes, meta_bytes, recv_bytes;
};

Result run(const MoeConfig& cfg, const BenchOptions& opt) {
  int me = 0, R = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &R);
  const int EL = cfg.experts_per_rank(), K = cfg.K();
  const size_t rb = cfg.row_bytes();
  const Routing r = synthetic_routing(cfg, me, cfg.T(), opt.skew, 1);
  std::vector<float> x(size_t(cfg.T() * cfg.H()));
  std::mt19937_64 rng{uint64_t(me)};
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  // Send order: destination, local expert, token (what a permute-1 step produces).
  std::vector<int32_t> order(r.expert.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return r.expert[size_t(a)] < r.expert[size_t(b)]; });
  std::vector<int> cnt(size_t(R * EL), 0), rcnt(size_t(R * EL));
  for (int32_t e : r.expert) ++cnt[size_t(e)];
  std::vector<double> ds, cs;
  double payload = 0, meta = 0, recv_rows = 0;
  std::vector<std::byte> sendbuf(order.size() * rb), recvbuf, perm;
  for (int it = 0; it < opt.warmup + opt.iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    auto t0 = Clock::now();
    for (size_t i = 0; i < order.size(); ++i) {
      const float* src = &x[size_t(order[i] / K) * size_t(cfg.H())];
      encode_rows(cfg, src, &sendbuf[i * rb], 1);
    }
    MPI_Alltoall(cnt.data(), EL, MPI_INT, rcnt.data(), EL, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> sc(static_cast<size_t>(R)), sd(static_cast<size_t>(R)), rc(static_cast<size_t>(R)), rd(static_cast<size_t>(R));
    int so = 0, ro = 0;
    for (int d = 0; d < R; ++d) {
      int a = 0, b = 0;
      for (int e = 0; e < EL; ++e) a += cnt[size_t(d * EL + e)], b += rcnt[size_t(d * EL + e)];
      sc[size_t(d)] = a * int(rb), sd[size_t(d)] = so, so += sc[size_t(d)];
      rc[size_t(d)] = b * int(rb), rd[size_t(d)] = ro, ro += rc[size_t(d)];
    }
    recvbuf.resize(size_t(ro));
    MPI_Alltoallv(sendbuf.data(), sc.data(), sd.data(), MPI_BYTE, recvbuf.data(), rc.data(), rd.data(), MPI_BYTE,
                  MPI_COMM_WORLD);
    // Permute [source][expert] chunks into [expert][source] order for the GEMMs.
    perm.resize(recvbuf.size());
    size_t out = 0;
    for (int e = 0; e < EL; ++e)
      for (int s = 0; s < R; ++s) {
        size_t in = size_t(rd[size_t(s)]);
        for (int e2 = 0; e2 < e; ++e2) in += size_t(rcnt[size_t(s * EL + e2)]) * rb;
        const size_t n = size_t(rcnt[size_t(s * EL + e)]) * rb;
        if (n) std::memcpy(&perm[out], &recvbuf[in], n);
        out += n;
      }
    double d = since(t0);
    MPI_Barrier(MPI_COMM_WORLD);
    // Combine: the reverse permute and exchange (outputs = the received rows).
    t0 = Clock::now();
    out = 0;
    for (int e = 0; e < EL; ++e)
      for (int s = 0; s < R; ++s) {
        size_t in = size_t(rd[size_t(s)]);
        for (int e2 = 0; e2 < e; ++e2) in += size_t(rcnt[size_t(s * EL + e2)]) * rb;
        const size_t n = size_t(rcnt[size_t(s * EL + e)]) * rb;
        if (n) std::memcpy(&recvbuf[in], &perm[out], n);
        out += n;
      }
    MPI_Alltoallv(recvbuf.data(), rc.data(), rd.data(), MPI_BYTE, sendbuf.data(), sc.data(), sd.data(), MPI_BYTE,
                  MPI_COMM_WORLD);
    double c = since(t0);
    MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &c, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it < opt.warmup) continue;
    ds.push_back(d);
    cs.push_back(c);
    payload = double(so - sc[size_t(me)]);
    meta = double((R - 1) * EL * 4);
    recv_rows = double(ro) / double(rb);
  }
  std::sort(ds.begin(), ds.end());
  std::sort(cs.begin(), cs.end());
  double sums[3] = {payload, meta, recv_rows};
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return {ds[ds.size() / 2], cs[cs.size() / 2], sums[0] / R, sums[1] / R, sums[2] * double(rb)};
}
}  // namespace

BenchRow bench_alltoallv(const BenchOptions& opt) {
  MoeShape tiny = opt.shape;
  tiny.hidden = opt.signal_hidden;
  BenchOptions sig = opt;
  sig.iters = std::max(opt.iters, 20);
  const Result s = run(MoeConfig(tiny), sig);
  const Result f = run(MoeConfig(opt.shape), opt);
  BenchRow row;
  row.transport = "mpi";
  row.method = "MPI_Alltoallv";
  row.routing = opt.routing_name;
  row.signal_us = s.dispatch_s * 1e6;
  row.known_us = 0;
  row.dispatch_us = f.dispatch_s * 1e6;
  row.combine_us = f.combine_s * 1e6;
  row.dispatch_gbs = f.recv_bytes / f.dispatch_s / 1e9;
  row.combine_gbs = f.recv_bytes / f.combine_s / 1e9;
  row.payload_kb = f.payload_bytes / 1024;
  row.meta_kb = f.meta_bytes / 1024;
  return row;
}

}  // namespace squeeze::mok
