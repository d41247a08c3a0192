// tools/cmd_moe.cpp — `squeeze moe test|bench|pipeline`: the MoK layer checked against the
// reference, the pull vs push dispatch/combine benchmark and the fused pipeline against the
// unfused layer; in-process ranks, or MPI
// ranks when started under mpirun with --transport mpi-shm|mpi-rma.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "args.h"
#include "command.h"
#include "core/error.h"
#include "mok/bench.h"
#include "mok/inproc_transport.h"
#include "mok/link_model.h"
#include "mok/pipeline_bench.h"
#include "moe_ranks.h"
#ifdef SQUEEZE_HAVE_MPI
#include "mok/mpi_alltoallv.h"
#endif

namespace {
using namespace squeeze;
using namespace squeeze::mok;
using tools::link_from;
using tools::on_ranks;
using tools::world_size;

MoeShape shape_from(const cli::Args& a, int ranks) {
  MoeShape s;
  s.tokens_per_rank = a.get_int("--tokens");
  s.hidden = a.get_int("--hidden");
  s.inter = a.get_int("--inter");
  s.n_experts = a.get_int32("--experts");
  s.top_k = a.get_int32("--topk");
  s.n_ranks = ranks;
  s.payload = parse_payload(a.get("--payload"));
  s.scoring = parse_scoring(a.get("--scoring"));
  s.shared_expert = a.has("--shared");
  return s;
}

cli::Args make_args(const char* sub, const char* what, const char* tokens, const char* hidden, const char* inter,
                    const char* experts, const char* topk) {
  cli::Args a(std::string("moe ") + sub, std::string("moe ") + sub + " [options]", what);
  a.option({"--transport"}, "NAME", "inproc | mpi-shm | mpi-rma (under mpirun)", "inproc")
      // The ranges are MoeConfig's (mok/config.cpp), checked here before any int cast.
      .int_option({"-r", "--ranks"}, "R", "in-process ranks", {1, 1024}, "4")
      .int_option({"--tokens"}, "T", "tokens per rank", {0, 1 << 20}, tokens)
      .int_option({"--hidden"}, "H", "hidden size", {1, 1 << 20}, hidden)
      .int_option({"--inter"}, "I", "expert intermediate size", {1, 1 << 20}, inter)
      .int_option({"--experts"}, "E", "experts", {1, 4096}, experts)
      .int_option({"--topk"}, "K", "experts per token (at most E)", {1, 4096}, topk)
      .option({"--payload"}, "DTYPE", "bf16 | f32 | mxfp8 (E4M3 with one E8M0 scale per 32 values; H % 32 == 0)", "bf16")
      .option({"--scoring"}, "NAME", "softmax | sigmoid", "softmax")
      .flag({"--shared"}, "add a shared expert")
      .option({"--link"}, "MODEL", "charge remote operations a modelled link: none | nvlink (1 µs, 160 GB/s) |\n"
                                    "ib (2 µs, 50 GB/s) (mok/link_model.h)", "none")
      .real_option({"--link-latency-us"}, "A", "the link model's one-way latency α (µs)", {.min = 0, .max = 1e6})
      .real_option({"--link-gbps"}, "B", "the link model's bandwidth β per peer (GB/s)", {.min = 0, .max = 1e6, .min_open = true});
  return a;
}

int run_test(int argc, char** argv) {
  auto a = make_args("test", "Runs the MoE layer forward and backward on R ranks for every dispatch x combine "
                     "variant and checks it against the float64 reference.", "16", "64", "32", "8", "2");
  if (!a.parse(argc, argv)) return 0;
  const std::string tr = a.get("--transport");
  const int R = world_size(tr, a.get_int32("--ranks"));
  const MoeConfig cfg(shape_from(a, R));
  bool all_ok = true;
  for (auto ds : {DispatchStyle::Pull, DispatchStyle::PushNegotiated, DispatchStyle::PushPrivate})
    for (auto cs : {CombineStyle::Pull, CombineStyle::Push}) {
      VerifyResult v;
      std::mutex m;
      on_ranks(tr, R, link_from(a), [&](Transport& t) {
        auto r = verify_layer(t, cfg, {ds, cs}, 42);
        // verify_layer all-reduces the errors, so every rank holds the same verdict.
        // In-process, rank 0's thread reports it; under MPI this process is one rank
        // and must keep its own copy, or every rank but 0 would exit 1.
        std::lock_guard<std::mutex> lock(m);
        if (t.rank() == 0 || t.name() != "inproc") v = r;
      });
      all_ok = all_ok && v.ok;
      {
        if (tools::reporting_rank(tr) != 0) continue;
        std::printf("%-16s %-5s %s  forward err %.2e  backward err %.2e  beyond wire-rounding flips %.2e (f32 bound %.2e)  %s\n",
                    dispatch_style_name(ds), combine_style_name(cs), cfg.describe().c_str(), v.out_err, v.dx_err,
                    std::max(0.0, v.beyond_flips), v.tol, v.ok ? "ok" : "FAIL");
      }
    }
  {
    // The fused pipeline (pull / pull) with its default options, through the same check.
    VerifyResult v;
    std::mutex m;
    on_ranks(tr, R, link_from(a), [&](Transport& t) {
      auto r = verify_layer(t, cfg, LayerOptions::fused_pull(), 42);
      std::lock_guard<std::mutex> lock(m);
      if (t.rank() == 0 || t.name() != "inproc") v = r;
    });
    all_ok = all_ok && v.ok;
    const int rank = tools::reporting_rank(tr);
    if (rank == 0)
      std::printf("%-16s %-5s %s  forward err %.2e  backward err %.2e  beyond wire-rounding flips %.2e (f32 bound %.2e)  %s\n",
                  "pull (fused)", "pull", cfg.describe().c_str(), v.out_err, v.dx_err, std::max(0.0, v.beyond_flips),
                  v.tol, v.ok ? "ok" : "FAIL");
  }
  SQZ_CHECK(all_ok, "moe test: a variant differs from the reference beyond its bound");
  return 0;
}

int run_bench(int argc, char** argv) {
  auto a = make_args("bench", "Times pull vs push-negotiated vs push-private dispatch and combine (and "
                     "MPI_Alltoallv under MPI) for balanced and skewed routing.", "128", "7168", "2048", "64", "8");
  a.int_option({"--iters"}, "N", "timed iterations", {1, 10000}, "10")
      .option({"--routing"}, "LIST", "balanced, skewed or both", "balanced,skewed")
      .real_option({"--skew"}, "S", "Zipf exponent of the skewed routing", {.min = 0, .max = 100}, "1.2");
  if (!a.parse(argc, argv)) return 0;
  const std::string tr = a.get("--transport");
  const int R = world_size(tr, a.get_int32("--ranks"));
  const int rank = tools::reporting_rank(tr);
  BenchOptions opt;
  opt.shape = shape_from(a, R);
  const MoeConfig cfg(opt.shape);
  opt.iters = a.get_int32("--iters");
  const LinkModel link = link_from(a);
  if (rank == 0) {
    std::printf("# %s, transport %s", cfg.describe().c_str(), tr.c_str());
    if (link.enabled()) std::printf(", link model %s (α %.2f µs, β %.1f GB/s)", link.name.c_str(), link.latency_us, link.gbps);
    std::printf("\n%-8s %-9s %-26s %9s %9s %11s %8s %11s %8s %10s %8s %7s %7s\n", "transport", "routing", "method",
                "signal_us", "known_us", "dispatch_us", "GB/s", "combine_us", "GB/s", "payload_KB", "meta_KB", "ops",
                "rtts");
  }
  const std::string list = a.get("--routing");
  for (const std::string name : {"balanced", "skewed"}) {
    if (list.find(name) == std::string::npos) continue;
    opt.routing_name = name;
    opt.skew = name == "skewed" ? a.get_double("--skew") : 0.0;
    std::vector<BenchRow> rows;
    std::mutex m;
    on_ranks(tr, R, link, [&](Transport& t) {
      auto r = bench_dispatch(t, opt);
      std::lock_guard<std::mutex> lock(m);
      if (t.rank() == 0) rows = r;
    });
#ifdef SQUEEZE_HAVE_MPI
    if (tr != "inproc") rows.push_back(bench_alltoallv(opt));
#endif
    if (rank != 0) continue;
    for (const auto& r : rows)
      std::printf("%-8s %-9s %-26s %9.1f %9.1f %11.1f %8.2f %11.1f %8.2f %10.1f %8.1f %7.1f %7.1f\n", r.transport.c_str(),
                  r.routing.c_str(), r.method.c_str(), r.signal_us, r.known_us, r.dispatch_us, r.dispatch_gbs,
                  r.combine_us, r.combine_gbs, r.payload_kb, r.meta_kb, r.remote_ops, r.round_trips);
    std::fflush(stdout);
  }
  return 0;
}

void add_pipeline_options(cli::Args& a) {
  a.int_option({"--comm-workers"}, "C", "fused pipeline: communication workers per rank", {1, 64}, "1")
      .int_option({"--compute-workers"}, "P", "fused pipeline: compute workers per rank", {1, 64}, "1")
      .int_option({"--tile-rows"}, "N", "fused pipeline: rows per tile", {1, 1 << 20}, "32")
      .int_option({"--waves"}, "W", "fused pipeline: minibatch in waves (0: chosen from the shape)", {0, 1 << 20}, "0")
      .int_option({"--ring"}, "S", "fused pipeline: minibatch slots in the ring", {1, 1 << 16}, "4");
}

PipelineOptions pipeline_from(const cli::Args& a) {
  PipelineOptions p;
  p.comm_workers = a.get_int32("--comm-workers");
  p.compute_workers = a.get_int32("--compute-workers");
  p.tile_rows = a.get_int("--tile-rows");
  p.waves = a.get_int32("--waves");
  p.ring_slots = a.get_int32("--ring");
  return p;
}

void print_phases(const char* what, const PhaseTimes& p) {
  std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", what, p.total_s * 1e3, p.dispatch_s * 1e3,
              p.experts_s * 1e3, p.pipeline_s * 1e3, p.combine_s * 1e3);
}

int run_pipeline(int argc, char** argv) {
  auto a = make_args("pipeline", "Times the fused pipeline (pull dispatch and expert GEMMs overlapped, outputs "
                     "published in place for the pull combine) against the unfused pull layer, forward and "
                     "backward, and sweeps the minibatch size.", "128", "7168", "2048", "16", "8");
  add_pipeline_options(a);
  a.int_option({"--iters"}, "N", "timed iterations", {1, 10000}, "3")
      .option({"--sweep"}, "LIST", "minibatch sizes in waves to time the fused forward at (e.g. 1,2,4,8)", "")
      .flag({"--no-backward"}, "time the forward only")
      .real_option({"--skew"}, "S", "router bias −S·ln(e+1) towards low experts (0: balanced)", {.min = 0, .max = 100}, "0");
  if (!a.parse(argc, argv)) return 0;
  const std::string tr = a.get("--transport");
  const int R = world_size(tr, a.get_int32("--ranks"));
  const int rank = tools::reporting_rank(tr);
  PipelineBenchOptions opt;
  if (!a.get("--sweep").empty())
    for (int64_t v : cli::parse_int_list("--sweep", a.get("--sweep"), {1, 1 << 20})) opt.sweep_waves.push_back(int(v));
  opt.shape = shape_from(a, R);
  const MoeConfig cfg(opt.shape);
  opt.iters = a.get_int32("--iters");
  opt.pipeline = pipeline_from(a);
  plan_pipeline({0, 0}, opt.pipeline);  // bad options fail here, before any rank starts
  opt.backward = !a.has("--no-backward");
  MoeWeights w = random_weights(cfg, 3);
  for (int e = 0; e < cfg.E(); ++e) w.router_bias[size_t(e)] = float(-a.get_double("--skew") * std::log(e + 1.0));
  const LinkModel link = link_from(a);
  PipelineBenchResult r;
  std::mutex m;
  on_ranks(tr, R, link, [&](Transport& t) {
    auto res = bench_pipeline(t, w, opt);
    std::lock_guard<std::mutex> lock(m);
    if (t.rank() == 0) r = res;
  });
  if (rank != 0) return 0;
  const double flop = 6.0 * double(r.rows) * double(cfg.H()) * double(cfg.I());
  std::printf("# %s, transport %s", cfg.describe().c_str(), tr.c_str());
  if (link.enabled()) std::printf(", link model %s (α %.2f µs, β %.1f GB/s)", link.name.c_str(), link.latency_us, link.gbps);
  std::printf("\n# rank 0: %lld rows (%.1f GFLOP of expert forward), %d threads per rank (C %d + P %d) x %d ranks on %u cores; "
              "tile %lld rows, minibatch %d waves (%lld minibatches), ring %d\n",
              static_cast<long long>(r.rows), flop / 1e9, r.threads_per_rank, opt.pipeline.comm_workers,
              opt.pipeline.compute_workers, R, r.cores, static_cast<long long>(opt.pipeline.tile_rows), r.waves,
              static_cast<long long>(r.minibatches), opt.pipeline.ring_slots);
  std::printf("| run | total ms | dispatch ms | experts ms | pipeline ms | combine ms |\n|---|---|---|---|---|---|\n");
  print_phases("unfused forward", r.unfused_fwd);
  print_phases("fused forward", r.fused_fwd);
  if (r.has_alltoallv) print_phases("MPI_Alltoallv forward", r.alltoallv_fwd);
  if (opt.backward) {
    print_phases("unfused backward", r.unfused_bwd);
    print_phases("fused backward", r.fused_bwd);
    if (r.has_alltoallv) print_phases("MPI_Alltoallv backward", r.alltoallv_bwd);
  }
  if (r.has_alltoallv)
    std::printf("fused vs the MPI_Alltoallv layer: forward %.2fx, backward %.2fx\n",
                r.alltoallv_fwd.total_s / r.fused_fwd.total_s,
                opt.backward ? r.alltoallv_bwd.total_s / r.fused_bwd.total_s : 0.0);
  std::printf("forward: fused %.2fx the unfused layer; transfer hidden behind compute %.0f%% (pipeline's account), "
              "%.0f%% (unfused dispatch + experts − pipeline)\n",
              r.unfused_fwd.total_s / r.fused_fwd.total_s, 100 * r.overlap_fwd, 100 * r.hidden_fwd);
  if (opt.backward)
    std::printf("backward: fused %.2fx the unfused layer; transfer hidden %.0f%% (pipeline's account), %.0f%% "
                "(difference)\n",
                r.unfused_bwd.total_s / r.fused_bwd.total_s, 100 * r.overlap_bwd, 100 * r.hidden_bwd);
  std::printf("payload per rank: %.0f KB received per dispatch, %.0f KB gathered per combine\n",
              r.dispatch_bytes / 1024, r.combine_bytes / 1024);
  std::printf("memcpy %.2f GB/s per rank; unfused dispatch %.2f GB/s (%.0f%% of memcpy), combine %.2f GB/s (%.0f%%)\n",
              r.memcpy_gbs, r.dispatch_bytes / r.unfused_fwd.dispatch_s / 1e9,
              100 * r.dispatch_bytes / r.unfused_fwd.dispatch_s / 1e9 / r.memcpy_gbs,
              r.combine_bytes / r.unfused_fwd.combine_s / 1e9,
              100 * r.combine_bytes / r.unfused_fwd.combine_s / 1e9 / r.memcpy_gbs);
  if (!r.sweep.empty()) {
    std::printf("| minibatch waves | fused forward ms |\n|---|---|\n");
    for (auto [waves, s] : r.sweep)
      std::printf("| %d%s | %.1f |\n", waves, waves == r.waves && opt.pipeline.waves == 0 ? " (default)" : "", s * 1e3);
  }
  return 0;
}

int run_moe(int argc, char** argv) {
  if (argc >= 1 && std::string(argv[0]) == "test") return run_test(argc - 1, argv + 1);
  if (argc >= 1 && std::string(argv[0]) == "bench") return run_bench(argc - 1, argv + 1);
  if (argc >= 1 && std::string(argv[0]) == "pipeline") return run_pipeline(argc - 1, argv + 1);
  if (argc >= 1 && (std::string(argv[0]) == "--help" || std::string(argv[0]) == "-h")) {
    std::printf("usage: squeeze moe test|bench|pipeline [options]   (each has --help)\n");
    return 0;
  }
  fail("moe: expected a subcommand: test, bench or pipeline (see squeeze moe --help)");
}
}  // namespace

SQZ_COMMAND("moe", "MoK expert-parallel MoE layer: test against the reference, bench pull vs push, the fused pipeline",
            run_moe);
